-- The energy read as PL/pgSQL functions, so that its plan is prepared once per session:
-- - energy_days_json: the energy-days statement of src/energy/energy_sql.ts;
-- - energy_read: the credential check and the energy days in one round trip. It returns the
--   credential's row (none when no key or session matches) and computes the days only when that
--   credential is live, may read, may see the store and the scope belongs to the store; the
--   service decides every refusal from the row in the contract's order (401, 403, 404, 403, 400).
-- The statement of src/energy/energy_sql.ts as it was when this migration was written, with its
-- parameters named.
CREATE FUNCTION energy_days_json(p_scope int, p_start date, p_end date)
RETURNS TABLE (summary text, days text)
LANGUAGE plpgsql STABLE AS $fn$
BEGIN
  RETURN QUERY 
WITH cal AS (
  SELECT d::date AS day FROM generate_series(p_start, p_end, interval '1 day') AS d
), facts AS (
  SELECT c.day, e.id, e.is_void, e.cleaned_source_kind, e.legacy_kwh, e.quality_status,
    e.quality_note, e.revision_no, e.import_row_id, e.source_reference,
    CASE WHEN e.is_void THEN (
      SELECT v.source_kind FROM energy_revisions v
      WHERE v.energy_id = e.id AND v.revision_no = e.revision_no
    ) END AS void_kind,
    CASE WHEN e.is_void THEN NULL ELSE coalesce(e.cleaned_kwh, e.legacy_kwh) END AS kwh
  FROM cal c
  LEFT JOIN energy_days e ON e.scope_id = p_scope AND e.business_date = c.day
    AND e.business_date BETWEEN p_start AND p_end
), shaped AS (
  SELECT f.*,
    CASE WHEN f.is_void THEN 'VOID' WHEN f.kwh IS NULL THEN 'NO_DATA' ELSE 'AVAILABLE' END AS status,
    CASE
      WHEN f.id IS NULL THEN NULL
      WHEN f.is_void THEN CASE WHEN f.void_kind IN ('CLEANED', 'LEGACY_DIRECT', 'MANUAL_UPLOAD')
                               THEN f.void_kind END
      WHEN f.cleaned_source_kind IS NOT NULL THEN f.cleaned_source_kind
      WHEN f.legacy_kwh IS NOT NULL THEN 'LEGACY_DIRECT'
    END AS source_kind
  FROM facts f
)
SELECT
  json_build_object(
    'requested_days', count(*),
    'available_days', count(*) FILTER (WHERE status = 'AVAILABLE'),
    'missing_days', count(*) FILTER (WHERE status = 'NO_DATA'),
    'void_days', count(*) FILTER (WHERE status = 'VOID'),
    'available_energy_kwh', round(sum(kwh), 4)::text,
    'complete', count(*) FILTER (WHERE status = 'AVAILABLE') = count(*),
    'saving_metrics_status', 'SEE_METRICS_ENDPOINT'
  )::text AS summary,
  json_agg(json_build_object(
    'business_date', day::text,
    'energy_id', id,
    'energy_kwh', round(kwh, 4)::text,
    'status', status,
    'source_kind', source_kind,
    'source_label', CASE
      WHEN status = 'VOID' THEN 'Voided day'
      WHEN status = 'NO_DATA' THEN 'No data'
      WHEN source_kind = 'CLEANED' THEN 'Cleaned value'
      WHEN source_kind = 'MANUAL_UPLOAD' THEN 'Cleaned value (manual upload)'
      ELSE 'Sealed legacy value'
    END,
    'quality_status', quality_status,
    'quality_note', quality_note,
    'revision_no', revision_no,
    'import_row_id', import_row_id,
    'source_reference', source_reference
  ) ORDER BY day)::text AS days
FROM shaped;
END;
$fn$;

CREATE FUNCTION energy_read(p_key_hash text, p_session_id text, p_store int, p_scope int,
                            p_start date, p_end date)
RETURNS TABLE (credential json, summary text, days text)
LANGUAGE plpgsql STABLE AS $fn$
DECLARE
  c record;
BEGIN
  IF p_key_hash IS NOT NULL THEN
    SELECT k.id::int AS key_id, m.id::int AS member_id, m.login_name, m.display_name, m.db_role,
      k.permissions, k.store_ids,
      (k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > now())) AS key_live,
      true AS session_live
    INTO c
    FROM access_keys k JOIN members m ON m.id = k.member_id
    WHERE k.key_hash = p_key_hash;
  ELSE
    SELECT k.id::int AS key_id, m.id::int AS member_id, m.login_name, m.display_name, m.db_role,
      k.permissions, k.store_ids,
      (k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > now())) AS key_live,
      (s.ended_at IS NULL AND s.expires_at > now()) AS session_live
    INTO c
    FROM sessions s
    JOIN access_keys k ON k.id = s.key_id
    JOIN members m ON m.id = k.member_id
    WHERE s.id = p_session_id;
  END IF;
  IF NOT FOUND THEN
    RETURN;
  END IF;
  credential := row_to_json(c);
  IF c.key_live AND c.session_live AND 'read' = ANY (c.permissions)
     AND (c.store_ids IS NULL OR p_store = ANY (c.store_ids))
     AND EXISTS (SELECT 1 FROM scopes sc WHERE sc.id = p_scope AND sc.store_id = p_store) THEN
    SELECT j.summary, j.days INTO summary, days FROM energy_days_json(p_scope, p_start, p_end) j;
  END IF;
  RETURN NEXT;
END;
$fn$;
