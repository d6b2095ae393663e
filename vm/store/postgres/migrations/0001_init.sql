-- compatible: 1
--
-- The first schema of the store. Key parts and run ids are compared
-- byte for byte (COLLATE "C"), as Go compares strings: listings have
-- one order whatever the database's locale.

-- Lease tokens: one sequence for the whole store, so a thread's tokens
-- only grow, across its deletion and re-creation and across restarts.
CREATE SEQUENCE lease_tokens;

-- A thread: its key, its checkpoint's bookkeeping and its lease. id is
-- never reused: a thread deleted and made again under its key is a new
-- row, and nothing of the old one (events, runs, deltas, lease) can
-- reach it. The frame is in frames, rewritten only when a commit
-- carries one; a commit rewrites this row, which stays small.
CREATE TABLE threads (
	id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	scope         text COLLATE "C" NOT NULL,
	workflow      text COLLATE "C" NOT NULL,
	thread        text COLLATE "C" NOT NULL,
	status        text NOT NULL DEFAULT '',
	hash          text NOT NULL DEFAULT '',
	wait          bytea,
	wake_at       timestamptz,
	run_id        text NOT NULL DEFAULT '',
	last_seq      bigint NOT NULL DEFAULT 0,
	first_seq     bigint NOT NULL DEFAULT 0,
	version       bigint NOT NULL DEFAULT 0,
	deltas        integer NOT NULL DEFAULT 0, -- how many rows of deltas it has
	created       timestamptz NOT NULL,
	updated       timestamptz NOT NULL,
	lease_owner   text,                       -- NULL when no lease is held
	lease_token   bigint NOT NULL DEFAULT 0,  -- the last token granted
	lease_expires timestamptz,
	UNIQUE (scope, workflow, thread)
) WITH (fillfactor = 80); -- room for the updates of commits to stay on their page (HOT)

-- Due: the threads that wait for a time.
CREATE INDEX threads_wake ON threads (wake_at) WHERE wake_at IS NOT NULL;

CREATE TABLE frames (
	thread_id bigint PRIMARY KEY,
	frame     bytea NOT NULL
);

-- The frame deltas written since the frame, numbered from 0.
CREATE TABLE deltas (
	thread_id bigint NOT NULL,
	n         integer NOT NULL,
	data      bytea NOT NULL,
	PRIMARY KEY (thread_id, n)
);

CREATE TABLE events (
	thread_id bigint NOT NULL,
	seq       bigint NOT NULL,
	run_id    text NOT NULL,
	time      timestamptz NOT NULL,
	silent    boolean NOT NULL,
	hidden    boolean NOT NULL,
	data      bytea,
	PRIMARY KEY (thread_id, seq)
);

CREATE TABLE runs (
	thread_id bigint NOT NULL,
	id        text COLLATE "C" NOT NULL,
	status    text COLLATE "C" NOT NULL,
	started   timestamptz NOT NULL,
	finished  timestamptz,
	outcome   bytea,
	error     text NOT NULL,
	input     bytea,
	PRIMARY KEY (thread_id, id)
);

-- Runs: the runs of a status, in cursor order.
CREATE INDEX runs_status ON runs (status, thread_id, id);
-- Pending and Stranded: the few runs running or queued.
CREATE INDEX runs_pending ON runs (thread_id) WHERE status IN ('running', 'queued');

CREATE TABLE sources (
	hash text COLLATE "C" PRIMARY KEY,
	src  bytea NOT NULL
);

-- TakeTask: when each periodic task was last taken, by the database's clock.
CREATE TABLE tasks (
	name  text COLLATE "C" PRIMARY KEY,
	taken timestamptz NOT NULL
);

-- Sync writes one of these rows, synchronously: its commit flushes the
-- write-ahead log up to it, and so every lazy commit before it.
CREATE TABLE syncs (
	slot integer PRIMARY KEY,
	n    bigint NOT NULL
);
INSERT INTO syncs SELECT s, 0 FROM generate_series(0, 15) AS s;

-- commit_v1 is Store.Commit in one statement, so one round trip: it
-- locks the thread's row, checks the lease and the expected version,
-- and writes the events, hides, run, checkpoint, frame and deltas. It
-- raises an error (class AG) when a check fails; the statement's
-- transaction then writes nothing. Its name carries a version: a later
-- schema that changes it adds commit_v2 and keeps this one while aguic
-- versions that call it may share the database.
CREATE FUNCTION commit_v1(
	p_scope text, p_workflow text, p_thread text, p_owner text, p_token bigint,
	p_expect bigint, p_lazy boolean,
	p_checkpoint boolean, p_status text, p_hash text, p_wait bytea, p_wake_at timestamptz, p_run_id text, p_frame bytea,
	p_trim boolean, p_keep integer, p_delta bytea,
	p_ev_run text[], p_ev_time timestamptz[], p_ev_silent boolean[], p_ev_hidden boolean[], p_ev_data bytea[],
	p_hide bigint[],
	p_run boolean, p_new_run boolean, p_r_id text, p_r_status text, p_r_started timestamptz,
	p_r_finished timestamptz, p_r_outcome bytea, p_r_error text, p_r_input bytea,
	OUT o_status text, OUT o_hash text, OUT o_wait bytea, OUT o_wake_at timestamptz, OUT o_run_id text,
	OUT o_last_seq bigint, OUT o_first_seq bigint, OUT o_version bigint, OUT o_created timestamptz, OUT o_updated timestamptz
) LANGUAGE plpgsql AS $$
DECLARE
	t record; -- the columns it reads, named: a later schema may add others
	n_ev integer := coalesce(cardinality(p_ev_data), 0);
	bad bigint;
BEGIN
	SELECT th.id, th.status, th.hash, th.wait, th.wake_at, th.run_id, th.last_seq, th.first_seq, th.version,
		th.deltas, th.lease_owner, th.lease_token
	INTO t FROM threads AS th
	WHERE th.scope = p_scope AND th.workflow = p_workflow AND th.thread = p_thread
	FOR UPDATE;
	IF NOT FOUND OR t.lease_owner IS DISTINCT FROM p_owner OR t.lease_token <> p_token THEN
		RAISE EXCEPTION 'the lease is no longer held' USING ERRCODE = 'AGL01';
	END IF;
	IF p_expect <> 0 AND t.version <> p_expect THEN
		RAISE EXCEPTION 'version %, expected %', t.version, p_expect USING ERRCODE = 'AGC01';
	END IF;
	IF p_lazy THEN
		-- Local to this transaction: its commit does not wait for the disk.
		PERFORM set_config('synchronous_commit', 'off', true);
	END IF;

	IF cardinality(p_hide) > 0 THEN
		SELECT h INTO bad FROM unnest(p_hide) AS h WHERE h < 1 OR h > t.last_seq + n_ev LIMIT 1;
		IF FOUND THEN
			RAISE EXCEPTION 'hide event %: the thread has no such event', bad USING ERRCODE = 'AGH01';
		END IF;
		UPDATE events AS e SET hidden = true
		WHERE e.thread_id = t.id AND e.seq = ANY (p_hide) AND e.seq <= t.last_seq AND NOT e.hidden;
	END IF;
	IF n_ev > 0 THEN
		INSERT INTO events (thread_id, seq, run_id, time, silent, hidden, data)
		SELECT t.id, t.last_seq + u.ord, u.run_id, u.time, u.silent,
			u.hidden OR (t.last_seq + u.ord) = ANY (coalesce(p_hide, '{}')), u.data
		FROM unnest(p_ev_run, p_ev_time, p_ev_silent, p_ev_hidden, p_ev_data)
			WITH ORDINALITY AS u(run_id, time, silent, hidden, data, ord);
		IF t.first_seq = 0 THEN
			t.first_seq := t.last_seq + 1;
		END IF;
		t.last_seq := t.last_seq + n_ev;
	END IF;

	IF p_run THEN
		IF p_new_run THEN
			INSERT INTO runs (thread_id, id, status, started, finished, outcome, error, input)
			VALUES (t.id, p_r_id, p_r_status, p_r_started, p_r_finished, p_r_outcome, p_r_error, p_r_input)
			ON CONFLICT (thread_id, id) DO NOTHING;
			IF NOT FOUND THEN
				RAISE EXCEPTION 'run %', p_r_id USING ERRCODE = 'AGR01';
			END IF;
		ELSE
			INSERT INTO runs (thread_id, id, status, started, finished, outcome, error, input)
			VALUES (t.id, p_r_id, p_r_status, p_r_started, p_r_finished, p_r_outcome, p_r_error, p_r_input)
			ON CONFLICT (thread_id, id) DO UPDATE SET
				status = excluded.status, started = excluded.started, finished = excluded.finished,
				outcome = excluded.outcome, error = excluded.error, input = excluded.input;
		END IF;
	END IF;

	IF p_checkpoint THEN
		t.status := p_status;
		t.hash := p_hash;
		t.wait := p_wait;
		t.wake_at := p_wake_at;
		t.run_id := p_run_id;
		IF p_frame IS NOT NULL THEN
			INSERT INTO frames (thread_id, frame) VALUES (t.id, p_frame)
			ON CONFLICT (thread_id) DO UPDATE SET frame = excluded.frame;
			IF t.deltas > 0 THEN
				DELETE FROM deltas WHERE thread_id = t.id;
				t.deltas := 0;
			END IF;
		END IF;
	END IF;
	IF p_trim THEN
		IF p_keep < 0 OR p_keep > t.deltas THEN
			RAISE EXCEPTION 'keep % frame deltas: the thread has %', p_keep, t.deltas USING ERRCODE = 'AGD01';
		END IF;
		IF p_keep < t.deltas THEN
			DELETE FROM deltas WHERE thread_id = t.id AND n >= p_keep;
			t.deltas := p_keep;
		END IF;
	END IF;
	IF p_delta IS NOT NULL THEN
		INSERT INTO deltas (thread_id, n, data) VALUES (t.id, t.deltas, p_delta);
		t.deltas := t.deltas + 1;
	END IF;

	UPDATE threads SET
		status = t.status, hash = t.hash, wait = t.wait, wake_at = t.wake_at, run_id = t.run_id,
		last_seq = t.last_seq, first_seq = t.first_seq, version = t.version + 1, deltas = t.deltas,
		updated = now()
	WHERE id = t.id
	RETURNING status, hash, wait, wake_at, run_id, last_seq, first_seq, version, created, updated
	INTO o_status, o_hash, o_wait, o_wake_at, o_run_id, o_last_seq, o_first_seq, o_version, o_created, o_updated;
END
$$;
