-- compatible: 1
--
-- commit_v2 is commit_v1 that may also give the lease up, in the same
-- transaction: the commit that ends a run releases its thread without
-- another round trip. An aguic that calls commit_v1 goes on working.
CREATE FUNCTION commit_v2(
	p_scope text, p_workflow text, p_thread text, p_owner text, p_token bigint,
	p_expect bigint, p_lazy boolean,
	p_checkpoint boolean, p_status text, p_hash text, p_wait bytea, p_wake_at timestamptz, p_run_id text, p_frame bytea,
	p_trim boolean, p_keep integer, p_delta bytea,
	p_ev_run text[], p_ev_time timestamptz[], p_ev_silent boolean[], p_ev_hidden boolean[], p_ev_data bytea[],
	p_hide bigint[],
	p_run boolean, p_new_run boolean, p_r_id text, p_r_status text, p_r_started timestamptz,
	p_r_finished timestamptz, p_r_outcome bytea, p_r_error text, p_r_input bytea,
	p_release boolean,
	OUT o_status text, OUT o_hash text, OUT o_wait bytea, OUT o_wake_at timestamptz, OUT o_run_id text,
	OUT o_last_seq bigint, OUT o_first_seq bigint, OUT o_version bigint, OUT o_created timestamptz, OUT o_updated timestamptz
) LANGUAGE plpgsql AS $$
BEGIN
	SELECT * INTO o_status, o_hash, o_wait, o_wake_at, o_run_id, o_last_seq, o_first_seq, o_version, o_created, o_updated
	FROM commit_v1(p_scope, p_workflow, p_thread, p_owner, p_token, p_expect, p_lazy,
		p_checkpoint, p_status, p_hash, p_wait, p_wake_at, p_run_id, p_frame,
		p_trim, p_keep, p_delta,
		p_ev_run, p_ev_time, p_ev_silent, p_ev_hidden, p_ev_data,
		p_hide,
		p_run, p_new_run, p_r_id, p_r_status, p_r_started, p_r_finished, p_r_outcome, p_r_error, p_r_input);
	IF p_release THEN
		-- commit_v1 checked the lease and holds the row's lock.
		UPDATE threads SET lease_owner = NULL, lease_expires = NULL
		WHERE scope = p_scope AND workflow = p_workflow AND thread = p_thread;
	END IF;
END
$$;
