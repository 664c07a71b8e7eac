package sqlstore

import "fmt"

// Migrations are numbered from 1; a store records the versions it applied
// in schema_migrations and applies the missing ones in order, each in its
// own transaction. Never edit a released migration: add one.
//
// The injection invariants live in the memories table's CHECK constraints
// (the same rules as store.Memory.Check), so a row that would let a
// disputed, superseded, stale, rejected, merged, low-confidence or
// unconfirmed memory be injected cannot be written by any client. The view
// injectable_memories adds the one rule a CHECK cannot state (stale_after
// against the clock). Memories are never deleted and their lineage never
// rewritten (triggers).

const memoryChecks = `
	CONSTRAINT instruction_needs_human CHECK (use_policy <> 'can_use_as_instruction' OR (status = 'user_confirmed' AND confirmed_by <> '')),
	CONSTRAINT unconfirmed_not_instruction CHECK (status NOT IN ('inferred','generated') OR use_policy <> 'can_use_as_instruction'),
	CONSTRAINT withdrawn_not_injected CHECK ((status NOT IN ('disputed','superseded') AND stale = 0 AND lifecycle = 'active') OR use_policy = 'do_not_inject_automatically'),
	CONSTRAINT low_confidence_not_injected CHECK (confidence >= 0.5 OR use_policy IN ('requires_confirmation','do_not_inject_automatically'))`

const memoryColumns = `
	id TEXT PRIMARY KEY,
	summary TEXT NOT NULL CHECK (length(trim(summary)) > 0),
	content TEXT NOT NULL,
	source_kind TEXT NOT NULL DEFAULT '',
	source_uri TEXT NOT NULL DEFAULT '',
	source_title TEXT NOT NULL DEFAULT '',
	source_ts BIGINT NOT NULL DEFAULT 0,
	status TEXT NOT NULL CHECK (status IN ('observed','inferred','user_confirmed','imported','generated','superseded','disputed')),
	confidence DOUBLE PRECISION NOT NULL CHECK (confidence >= 0 AND confidence <= 1),
	created_by TEXT NOT NULL DEFAULT '',
	model TEXT NOT NULL DEFAULT '',
	runtime TEXT NOT NULL DEFAULT '',
	use_policy TEXT NOT NULL CHECK (use_policy IN ('can_use_as_instruction','can_use_as_evidence','requires_confirmation','do_not_inject_automatically')),
	use_reason TEXT NOT NULL DEFAULT '',
	behavior TEXT NOT NULL DEFAULT '',
	created_at BIGINT NOT NULL,
	last_confirmed_at BIGINT NOT NULL DEFAULT 0,
	last_seen_at BIGINT NOT NULL,
	stale_after BIGINT NOT NULL DEFAULT 0,
	stale INTEGER NOT NULL DEFAULT 0 CHECK (stale IN (0, 1)),
	workspace TEXT NOT NULL CHECK (workspace <> ''),
	project TEXT NOT NULL DEFAULT '',
	visibility TEXT NOT NULL CHECK (visibility IN ('personal','project','workspace','org')),
	entities TEXT NOT NULL DEFAULT '',
	supersedes TEXT NOT NULL DEFAULT '',
	superseded_by TEXT NOT NULL DEFAULT '',
	disputes TEXT NOT NULL DEFAULT '',
	confirmed_by TEXT NOT NULL DEFAULT '',
	lifecycle TEXT NOT NULL DEFAULT 'active' CHECK (lifecycle IN ('active','rejected','merged')),
	pattern_key TEXT NOT NULL DEFAULT '',
	occurrences INTEGER NOT NULL DEFAULT 1 CHECK (occurrences >= 1),
	lineage_session TEXT NOT NULL DEFAULT '',
	lineage_seq BIGINT NOT NULL DEFAULT 0,
	lineage_hash TEXT NOT NULL DEFAULT '',
	decision_id TEXT NOT NULL DEFAULT ''`

// commonTables are written in the SQL both engines accept.
const commonTables = `
CREATE INDEX memories_pattern ON memories (workspace, pattern_key) WHERE pattern_key <> '';
CREATE INDEX memories_seen ON memories (workspace, last_seen_at);
CREATE TABLE memory_entities (
	entity TEXT NOT NULL,
	last_seen_at BIGINT NOT NULL,
	memory_id TEXT NOT NULL REFERENCES memories (id),
	PRIMARY KEY (entity, memory_id)
);
CREATE INDEX memory_entities_recent ON memory_entities (entity, last_seen_at);
CREATE INDEX memory_entities_memory ON memory_entities (memory_id);
CREATE TABLE observations (
	lineage_key TEXT PRIMARY KEY,
	memory_id TEXT NOT NULL REFERENCES memories (id),
	session TEXT NOT NULL,
	seq BIGINT NOT NULL,
	entry_hash TEXT NOT NULL,
	observed_at BIGINT NOT NULL
);
CREATE INDEX observations_memory ON observations (memory_id);
CREATE TABLE decisions (
	id TEXT PRIMARY KEY,
	idempotency_key TEXT NOT NULL UNIQUE,
	workspace TEXT NOT NULL,
	action_id TEXT NOT NULL,
	outcome TEXT NOT NULL CHECK (outcome IN ('allow','block','revise','escalate')),
	body TEXT NOT NULL,
	created_at BIGINT NOT NULL
);
CREATE TABLE review_items (
	id TEXT PRIMARY KEY,
	memory_id TEXT NOT NULL REFERENCES memories (id),
	priority TEXT NOT NULL CHECK (priority IN ('high','normal')),
	reason TEXT NOT NULL,
	status TEXT NOT NULL CHECK (status IN ('pending','escalated','resolved')),
	suggested TEXT NOT NULL CHECK (suggested IN ('can_use_as_instruction','can_use_as_evidence','requires_confirmation','do_not_inject_automatically')),
	created_at BIGINT NOT NULL,
	resolved_at BIGINT NOT NULL DEFAULT 0,
	resolution TEXT NOT NULL DEFAULT '',
	resolved_by TEXT NOT NULL DEFAULT ''
);
CREATE UNIQUE INDEX review_open ON review_items (memory_id) WHERE status <> 'resolved';
CREATE INDEX review_queue ON review_items (status, priority, created_at);
CREATE TABLE recalls (
	id TEXT PRIMARY KEY,
	request_id TEXT NOT NULL,
	at BIGINT NOT NULL,
	session TEXT NOT NULL,
	action_id TEXT NOT NULL,
	workspace TEXT NOT NULL,
	query TEXT NOT NULL,
	tool_name TEXT NOT NULL
);
CREATE TABLE recall_items (
	recall_id TEXT NOT NULL REFERENCES recalls (id),
	memory_id TEXT NOT NULL,
	rank INTEGER NOT NULL,
	returned_as TEXT NOT NULL CHECK (returned_as IN ('memory','policy_hit')),
	used_as TEXT NOT NULL DEFAULT '' CHECK (used_as IN ('','instruction','evidence','background')),
	decision_id TEXT NOT NULL DEFAULT '',
	PRIMARY KEY (recall_id, memory_id)
);
CREATE INDEX recall_items_memory ON recall_items (memory_id);
CREATE TABLE approvals (
	id TEXT PRIMARY KEY,
	decision_id TEXT NOT NULL DEFAULT '',
	workspace TEXT NOT NULL DEFAULT '',
	session TEXT NOT NULL DEFAULT '',
	tool_use_id TEXT NOT NULL DEFAULT '',
	tool TEXT NOT NULL,
	summary TEXT NOT NULL,
	reason TEXT NOT NULL,
	risk_class TEXT NOT NULL DEFAULT '',
	arguments_digest TEXT NOT NULL DEFAULT '',
	status TEXT NOT NULL CHECK (status IN ('pending','approved','rejected','modified','escalated','expired')),
	owner TEXT NOT NULL DEFAULT '',
	created_at BIGINT NOT NULL,
	timeout_at BIGINT NOT NULL,
	resolved_at BIGINT NOT NULL DEFAULT 0,
	resolved_by TEXT NOT NULL DEFAULT '',
	note TEXT NOT NULL DEFAULT '',
	arguments TEXT NOT NULL DEFAULT '',
	CHECK (status <> 'modified' OR arguments <> '')
);
CREATE INDEX approvals_status ON approvals (status, created_at);
`

const injectableView = `
CREATE VIEW injectable_memories AS
SELECT * FROM memories
WHERE lifecycle = 'active'
  AND use_policy IN ('can_use_as_instruction','can_use_as_evidence')
  AND status NOT IN ('disputed','superseded')
  AND stale = 0
  AND confidence >= 0.5
  AND (stale_after = 0 OR stale_after > %s);
`

var sprintf = fmt.Sprintf

// creatorColumns (migration 3) record which API token created an approval
// or a decision (store.Approval.Creator, store.Decision.Creator). Rows
// written before it, and everything the hooks and the CLI write, have an
// empty creator, which no runtime token matches.
const creatorColumns = `
ALTER TABLE approvals ADD COLUMN creator TEXT NOT NULL DEFAULT '';
ALTER TABLE decisions ADD COLUMN creator TEXT NOT NULL DEFAULT '';
`

// sessionOwners (migration 4) records the API token that first wrote to
// each ledger session (store.Store.ClaimSession), keyed by the ledger it
// lives in (scope) and the session id. The first claim wins (INSERT … ON
// CONFLICT DO NOTHING); a row is never rewritten or removed (triggers).
const sessionOwners = `
CREATE TABLE session_owners (
	scope TEXT NOT NULL,
	session TEXT NOT NULL CHECK (session <> ''),
	owner TEXT NOT NULL CHECK (owner <> ''),
	claimed_at BIGINT NOT NULL,
	PRIMARY KEY (scope, session)
);
`

var sqliteMigrations = []string{
	1: `
CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at BIGINT NOT NULL);
CREATE TABLE memories (` + memoryColumns + `,` + memoryChecks + `
);` + commonTables + sprintf(injectableView, "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)") + `
CREATE TABLE memory_events (
	id INTEGER PRIMARY KEY AUTOINCREMENT,
	memory_id TEXT NOT NULL REFERENCES memories (id),
	at BIGINT NOT NULL,
	actor TEXT NOT NULL,
	action TEXT NOT NULL,
	detail TEXT NOT NULL DEFAULT ''
);
CREATE INDEX memory_events_memory ON memory_events (memory_id);
CREATE VIRTUAL TABLE memories_fts USING fts5 (summary, content, entities, content = 'memories', content_rowid = 'rowid', tokenize = 'porter unicode61');
CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
	INSERT INTO memories_fts (rowid, summary, content, entities) VALUES (new.rowid, new.summary, new.content, new.entities);
END;
CREATE TRIGGER memories_fts_update AFTER UPDATE OF summary, content, entities ON memories BEGIN
	INSERT INTO memories_fts (memories_fts, rowid, summary, content, entities) VALUES ('delete', old.rowid, old.summary, old.content, old.entities);
	INSERT INTO memories_fts (rowid, summary, content, entities) VALUES (new.rowid, new.summary, new.content, new.entities);
END;
CREATE TRIGGER memories_no_delete BEFORE DELETE ON memories BEGIN
	SELECT RAISE(ABORT, 'memories are never deleted');
END;
CREATE TRIGGER memories_lineage_fixed BEFORE UPDATE OF id, created_at, lineage_session, lineage_seq, lineage_hash, decision_id ON memories
WHEN new.id IS NOT old.id OR new.created_at IS NOT old.created_at OR new.lineage_session IS NOT old.lineage_session
  OR new.lineage_seq IS NOT old.lineage_seq OR new.lineage_hash IS NOT old.lineage_hash OR new.decision_id IS NOT old.decision_id
BEGIN
	SELECT RAISE(ABORT, 'memory lineage is never rewritten');
END;
CREATE TRIGGER decisions_append_only BEFORE UPDATE ON decisions BEGIN
	SELECT RAISE(ABORT, 'decisions are never rewritten');
END;
`,
	2: `
CREATE INDEX memories_org ON memories (last_seen_at) WHERE visibility = 'org';
`,
	3: creatorColumns + `
CREATE TRIGGER approvals_creator_fixed BEFORE UPDATE OF creator ON approvals
WHEN new.creator IS NOT old.creator
BEGIN
	SELECT RAISE(ABORT, 'an approval''s creator is never rewritten');
END;
`,
	4: sessionOwners + `
CREATE TRIGGER session_owners_fixed BEFORE UPDATE ON session_owners BEGIN
	SELECT RAISE(ABORT, 'a session''s owner is never rewritten');
END;
CREATE TRIGGER session_owners_no_delete BEFORE DELETE ON session_owners BEGIN
	SELECT RAISE(ABORT, 'a session''s owner is never removed');
END;
`,
}

var postgresMigrations = []string{
	1: `
CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at BIGINT NOT NULL);
CREATE TABLE memories (` + memoryColumns + `,
	search tsvector GENERATED ALWAYS AS (to_tsvector('english', summary || ' ' || content || ' ' || replace(entities, ':', ' '))) STORED,` + memoryChecks + `
);
CREATE INDEX memories_search ON memories USING GIN (search);` + commonTables + sprintf(injectableView, "(extract(epoch FROM clock_timestamp()) * 1000)::bigint") + `
CREATE TABLE memory_events (
	id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	memory_id TEXT NOT NULL REFERENCES memories (id),
	at BIGINT NOT NULL,
	actor TEXT NOT NULL,
	action TEXT NOT NULL,
	detail TEXT NOT NULL DEFAULT ''
);
CREATE INDEX memory_events_memory ON memory_events (memory_id);
CREATE FUNCTION docket_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	RAISE EXCEPTION '%', TG_ARGV[0];
END $$;
CREATE TRIGGER memories_no_delete BEFORE DELETE ON memories FOR EACH ROW EXECUTE FUNCTION docket_refuse('memories are never deleted');
CREATE TRIGGER memories_lineage_fixed BEFORE UPDATE ON memories FOR EACH ROW
	WHEN (new.id IS DISTINCT FROM old.id OR new.created_at IS DISTINCT FROM old.created_at OR new.lineage_session IS DISTINCT FROM old.lineage_session
	  OR new.lineage_seq IS DISTINCT FROM old.lineage_seq OR new.lineage_hash IS DISTINCT FROM old.lineage_hash OR new.decision_id IS DISTINCT FROM old.decision_id)
	EXECUTE FUNCTION docket_refuse('memory lineage is never rewritten');
CREATE TRIGGER decisions_append_only BEFORE UPDATE ON decisions FOR EACH ROW EXECUTE FUNCTION docket_refuse('decisions are never rewritten');
`,
	2: `
CREATE INDEX memories_org ON memories (last_seen_at) WHERE visibility = 'org';
`,
	3: creatorColumns + `
CREATE TRIGGER approvals_creator_fixed BEFORE UPDATE ON approvals FOR EACH ROW
	WHEN (new.creator IS DISTINCT FROM old.creator)
	EXECUTE FUNCTION docket_refuse('an approval''s creator is never rewritten');
`,
	4: sessionOwners + `
CREATE TRIGGER session_owners_fixed BEFORE UPDATE ON session_owners FOR EACH ROW
	EXECUTE FUNCTION docket_refuse('a session''s owner is never rewritten');
CREATE TRIGGER session_owners_no_delete BEFORE DELETE ON session_owners FOR EACH ROW
	EXECUTE FUNCTION docket_refuse('a session''s owner is never removed');
`,
}
