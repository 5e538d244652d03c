// The energy read as PL/pgSQL functions, so that its plan is prepared once per session:
// - energy_days_json: the energy-days statement of src/energy/energy_sql.ts, verbatim;
// - energy_read: the credential check and the energy days in one round trip. It returns the
//   credential's row (none when no key or session matches) and computes the days only when that
//   credential is live, may read, may see the store and the scope belongs to the store; the
//   service decides every refusal from the row in the contract's order (401, 403, 404, 403, 400).
import { SqlClient } from "@effect/sql";
import { Effect } from "effect";
import { energyDaysSql } from "../src/energy/energy_sql.ts";

const body = energyDaysSql
  .replaceAll("$1::int", "p_scope")
  .replaceAll("$2::date", "p_start")
  .replaceAll("$3::date", "p_end");

if (/\$\d/.test(body)) throw new Error("energy_days_json: an unreplaced parameter is left");

export const statements = `
CREATE FUNCTION energy_days_json(p_scope int, p_start date, p_end date)
RETURNS TABLE (summary text, days text)
LANGUAGE plpgsql STABLE AS $fn$
BEGIN
  RETURN QUERY ${body};
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
`;

export default Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe(statements));
