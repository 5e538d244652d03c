-- Session ids are kept as SHA-256 hashes (the id column holds the hash), like access keys: a copy
-- of the table opens no session.
-- Sessions stored before this migration held their ids in clear; they are ended (their holders
-- sign in again).
DELETE FROM sessions;
ALTER TABLE sessions ADD CONSTRAINT sessions_id_is_hash CHECK (id ~ '^[0-9a-f]{64}$');
COMMENT ON COLUMN sessions.id IS 'SHA-256 (hex) of the session id in the cookie';
