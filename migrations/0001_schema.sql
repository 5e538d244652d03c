-- The whole data model: reference data, access, energy facts with append-only revisions, imports, targets.
CREATE TABLE dataset (
  id smallint PRIMARY KEY DEFAULT 1 CHECK (id = 1),
  label text NOT NULL,
  start_date date NOT NULL,
  end_date date NOT NULL,
  source_policy text NOT NULL CHECK (source_policy IN ('CLEANED_SAMPLE', 'CLEANED_THEN_LEGACY_THEN_NULL')),
  timezone text NOT NULL,
  unit text NOT NULL,
  CHECK (start_date <= end_date)
);

CREATE TABLE app_settings (
  key text PRIMARY KEY,
  value text NOT NULL
);

CREATE TABLE brands (
  id integer PRIMARY KEY,
  name text NOT NULL UNIQUE
);

CREATE TABLE stores (
  id integer PRIMARY KEY CHECK (id >= 1),
  brand_id integer NOT NULL REFERENCES brands(id),
  store_code text NOT NULL UNIQUE,
  source_org_id integer CHECK (source_org_id >= 1),
  name text NOT NULL CHECK (length(name) BETWEEN 1 AND 80),
  address text CHECK (length(address) BETWEEN 1 AND 200),
  city text,
  business_hours jsonb,
  peak_hours jsonb,
  business_mode text,
  settlement_mode text,
  is_key_store boolean NOT NULL DEFAULT false,
  key_store_status text NOT NULL CHECK (key_store_status IN ('MARKED', 'UNCONFIRMED')),
  tags jsonb,
  equipment_profile jsonb,
  profile_editable boolean NOT NULL DEFAULT true,
  version integer NOT NULL DEFAULT 1 CHECK (version >= 1),
  UNIQUE (brand_id, name)
);

CREATE TABLE scopes (
  id integer PRIMARY KEY CHECK (id >= 1),
  store_id integer NOT NULL REFERENCES stores(id),
  kind text NOT NULL,
  unit text NOT NULL,
  timezone text NOT NULL
);
CREATE INDEX scopes_store ON scopes (store_id);

CREATE TABLE members (
  id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  login_name text NOT NULL UNIQUE,
  display_name text,
  db_role text NOT NULL CHECK (db_role IN ('READER', 'WRITER')),
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE access_keys (
  id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  member_id integer NOT NULL REFERENCES members(id),
  key_hash text NOT NULL UNIQUE,
  key_prefix text NOT NULL,
  permissions text[] NOT NULL CHECK (permissions <@ ARRAY['read', 'write', 'raw']::text[]),
  store_ids integer[],
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz,
  revoked_at timestamptz
);

CREATE TABLE sessions (
  id text PRIMARY KEY,
  key_id integer NOT NULL REFERENCES access_keys(id),
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  ended_at timestamptz
);

-- Sealed sources: the bytes of every file that fed the data, and the records read from them.
CREATE TABLE source_files (
  id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  sha256 text NOT NULL,
  filename text,
  source_kind text NOT NULL,
  content bytea,
  byte_size integer NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX source_files_sha ON source_files (sha256);

CREATE TABLE source_records (
  id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  source_file_id integer REFERENCES source_files(id),
  source_kind text NOT NULL,
  source_table text NOT NULL,
  file_sha256 text NOT NULL,
  explanation text,
  record jsonb NOT NULL
);
CREATE INDEX source_records_file ON source_records (source_file_id);

CREATE TABLE import_batches (
  id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  batch_no text NOT NULL UNIQUE,
  batch_kind text NOT NULL CHECK (batch_kind IN ('UPLOAD', 'PLATFORM_LEGACY', 'PLATFORM_CLEANED')),
  filename text,
  status text NOT NULL CHECK (status IN ('PREVIEWED', 'COMMITTED')),
  source_file_id integer REFERENCES source_files(id),
  member_id integer REFERENCES members(id),
  committed_by integer REFERENCES members(id),
  change_reason text,
  note text NOT NULL DEFAULT '',
  uploaded_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz,
  committed_at timestamptz
);

CREATE TABLE import_rows (
  id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  batch_id integer NOT NULL REFERENCES import_batches(id),
  row_number integer NOT NULL CHECK (row_number >= 1),
  resolved_store_id integer NOT NULL REFERENCES stores(id),
  scope_id integer NOT NULL REFERENCES scopes(id),
  business_date date NOT NULL,
  raw_brand text,
  raw_store_name text,
  raw_date text,
  raw_energy text,
  proposed_kwh numeric CHECK (proposed_kwh >= 0 AND proposed_kwh = round(proposed_kwh, 4)),
  proposed_void boolean NOT NULL DEFAULT false,
  before_kwh numeric,
  before_is_void boolean,
  before_revision_no integer,
  action text NOT NULL CHECK (action IN ('INSERT', 'UPDATE', 'UNCHANGED', 'VOID', 'RESTORE', 'RELINK', 'SKIP_MISSING', 'KEEP_CLEANED')),
  source_kind text NOT NULL,
  quality_status text NOT NULL,
  quality_note text,
  note_field text CHECK (note_field IN ('ABSENT_WIDE_TABLE', 'ABSENT_NO_COLUMN')),
  lineage_status text NOT NULL,
  source_reference jsonb,
  UNIQUE (batch_id, row_number)
);
CREATE INDEX import_rows_batch ON import_rows (batch_id);

CREATE TABLE import_row_sources (
  import_row_id integer NOT NULL REFERENCES import_rows(id),
  source_record_id integer NOT NULL REFERENCES source_records(id),
  PRIMARY KEY (import_row_id, source_record_id)
);

-- The current fact of a store-day. Every change to it is an energy_revisions row written in the same transaction.
CREATE TABLE energy_days (
  id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  store_id integer NOT NULL REFERENCES stores(id),
  scope_id integer NOT NULL REFERENCES scopes(id),
  business_date date NOT NULL,
  legacy_kwh numeric CHECK (legacy_kwh >= 0 AND legacy_kwh = round(legacy_kwh, 4)),
  cleaned_kwh numeric CHECK (cleaned_kwh >= 0 AND cleaned_kwh = round(cleaned_kwh, 4)),
  cleaned_source_kind text CHECK (cleaned_source_kind IN ('CLEANED', 'MANUAL_UPLOAD')),
  is_void boolean NOT NULL DEFAULT false,
  provisional smallint NOT NULL DEFAULT 0 CHECK (provisional IN (0, 1)),
  provisional_at timestamptz,
  quality_status text,
  quality_note text,
  revision_no integer NOT NULL CHECK (revision_no >= 1),
  import_row_id integer NOT NULL REFERENCES import_rows(id),
  source_reference jsonb,
  UNIQUE (scope_id, business_date),
  CHECK ((cleaned_kwh IS NULL) = (cleaned_source_kind IS NULL)),
  CHECK (provisional = 0 OR provisional_at IS NOT NULL)
);
CREATE INDEX energy_days_store_date ON energy_days (store_id, business_date);

CREATE TABLE energy_revisions (
  id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  energy_id integer NOT NULL REFERENCES energy_days(id),
  revision_no integer NOT NULL CHECK (revision_no >= 1),
  operation text NOT NULL,
  before_kwh numeric,
  after_kwh numeric,
  before_is_void boolean,
  after_is_void boolean NOT NULL,
  committed_at timestamptz NOT NULL DEFAULT now(),
  change_reason text NOT NULL,
  import_row_id integer NOT NULL REFERENCES import_rows(id),
  source_kind text NOT NULL,
  source_label text NOT NULL,
  quality_status text,
  quality_note text,
  member_id integer REFERENCES members(id),
  UNIQUE (energy_id, revision_no)
);
CREATE INDEX energy_revisions_row ON energy_revisions (import_row_id);

CREATE FUNCTION refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION '% rows are immutable', TG_TABLE_NAME;
END;
$$;
CREATE TRIGGER energy_revisions_immutable BEFORE UPDATE OR DELETE ON energy_revisions
  FOR EACH ROW EXECUTE FUNCTION refuse_change();
CREATE TRIGGER source_files_immutable BEFORE UPDATE OR DELETE ON source_files
  FOR EACH ROW EXECUTE FUNCTION refuse_change();
CREATE TRIGGER source_records_immutable BEFORE UPDATE OR DELETE ON source_records
  FOR EACH ROW EXECUTE FUNCTION refuse_change();

CREATE TABLE idempotency_records (
  member_id integer NOT NULL REFERENCES members(id),
  idem_key text NOT NULL CHECK (length(idem_key) BETWEEN 1 AND 64),
  operation text NOT NULL,
  request_hash text NOT NULL,
  status_code integer,
  response jsonb,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (member_id, idem_key)
);

CREATE TABLE target_periods (
  id integer PRIMARY KEY CHECK (id >= 1),
  store_id integer NOT NULL REFERENCES stores(id),
  scope_id integer NOT NULL REFERENCES scopes(id),
  valid_from date NOT NULL,
  valid_to date,
  tes_kwh numeric CHECK (tes_kwh >= 0),
  tev_warning_ratio numeric NOT NULL DEFAULT 1.2 CHECK (tev_warning_ratio > 0),
  source_kind text NOT NULL,
  source_reference text,
  CHECK (valid_to IS NULL OR valid_to >= valid_from)
);
CREATE INDEX target_periods_scope ON target_periods (scope_id, valid_from);

CREATE TABLE target_period_items (
  id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  period_id integer NOT NULL REFERENCES target_periods(id),
  item_name text NOT NULL,
  unit_price numeric NOT NULL CHECK (unit_price >= 0),
  priced_quantity numeric NOT NULL CHECK (priced_quantity >= 0)
);
CREATE INDEX target_period_items_period ON target_period_items (period_id);

CREATE TABLE tev_observations (
  id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  store_id integer NOT NULL REFERENCES stores(id),
  scope_id integer NOT NULL REFERENCES scopes(id),
  observed_date date NOT NULL,
  value_kwh numeric,
  is_valid boolean NOT NULL,
  source_reference text
);
CREATE INDEX tev_observations_scope ON tev_observations (scope_id, observed_date);

CREATE TABLE stage_history (
  id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  store_id integer NOT NULL REFERENCES stores(id),
  stage text NOT NULL CHECK (stage IN ('BASELINE', 'INSTALLING', 'TRIAL', 'OPERATING', 'SUSPENDED', 'EXITED')),
  valid_from date NOT NULL,
  valid_to date,
  change_reason text NOT NULL,
  CHECK (valid_to IS NULL OR valid_to > valid_from)
);
CREATE INDEX stage_history_store ON stage_history (store_id, valid_from);

CREATE TABLE stage_snapshots (
  store_id integer PRIMARY KEY REFERENCES stores(id),
  stage text,
  stage_basis text,
  legacy_progress text,
  captured_at timestamptz NOT NULL,
  source_reference text NOT NULL,
  basis text NOT NULL
);

CREATE TABLE devices (
  id integer PRIMARY KEY CHECK (id >= 1),
  store_id integer NOT NULL REFERENCES stores(id),
  source_device_id text NOT NULL,
  device_name varchar(50),
  device_code text NOT NULL,
  device_type text NOT NULL,
  material_code varchar(16),
  online_status text NOT NULL CHECK (online_status IN ('ONLINE', 'OFFLINE', 'UNKNOWN')),
  status_observed_at timestamptz,
  synced_at timestamptz,
  source_reference text
);
CREATE INDEX devices_store ON devices (store_id);

CREATE TABLE device_events (
  id integer PRIMARY KEY CHECK (id >= 1),
  store_id integer NOT NULL REFERENCES stores(id),
  device_id integer NOT NULL REFERENCES devices(id),
  event_type text NOT NULL,
  occurred_at timestamptz NOT NULL,
  note text
);
CREATE INDEX device_events_store ON device_events (store_id, occurred_at);

CREATE TABLE strategies (
  store_id integer PRIMARY KEY REFERENCES stores(id),
  configured_count integer CHECK (configured_count >= 0),
  dispatched_count integer CHECK (dispatched_count >= 0),
  distinguish_calendar boolean,
  execution_status text NOT NULL,
  source_reference text,
  observed_at timestamptz,
  synced_at timestamptz NOT NULL
);

CREATE TABLE strategy_items (
  id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  store_id integer NOT NULL REFERENCES stores(id),
  position integer NOT NULL,
  name text NOT NULL,
  date_category text,
  day_week text,
  publish_status text,
  issue_status integer,
  publish_time timestamptz,
  issue_time timestamptz
);
CREATE INDEX strategy_items_store ON strategy_items (store_id, position);

CREATE TABLE target_candidates (
  store_id integer PRIMARY KEY REFERENCES stores(id),
  tes_180_kwh numeric NOT NULL CHECK (tes_180_kwh >= 0),
  tes_210_kwh numeric NOT NULL CHECK (tes_210_kwh >= 0),
  known_payback_days integer CHECK (known_payback_days IN (180, 210)),
  selected_candidate_kwh numeric CHECK (selected_candidate_kwh >= 0),
  source_revision integer NOT NULL CHECK (source_revision >= 1),
  source_sheet_id text NOT NULL,
  source_row integer NOT NULL CHECK (source_row >= 1),
  source_url text NOT NULL,
  status text NOT NULL CHECK (status IN ('AWAITING_EFFECTIVE_DATE', 'AWAITING_SETTLEMENT_AND_DATE')),
  unit text NOT NULL,
  basis text NOT NULL,
  capture_id integer NOT NULL CHECK (capture_id >= 1),
  source_record_id integer NOT NULL CHECK (source_record_id >= 1)
);

CREATE TABLE audit_log (
  id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  member_id integer REFERENCES members(id),
  action text NOT NULL,
  entity_type text NOT NULL,
  entity_id integer NOT NULL,
  before jsonb,
  after jsonb,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX audit_log_entity ON audit_log (entity_type, entity_id);
CREATE TRIGGER audit_log_immutable BEFORE UPDATE OR DELETE ON audit_log
  FOR EACH ROW EXECUTE FUNCTION refuse_change();
