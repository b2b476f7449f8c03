-- A grant may answer a limited number of calls (NULL: no limit). Once `uses` reaches
-- `max_uses` it no longer applies.
--
-- A rule's use is no longer counted by `countersign_append`: the matcher claims it before the
-- call runs, by one `UPDATE … WHERE uses < max_uses AND …` (rows_affected 0: the call asks),
-- so two instances never both spend the last use. The append's `p_rule_used` argument
-- becomes `p_rule_max_uses` (same position), the new rule's limit. The rest of the function is
-- that of migration 0006, unchanged.

ALTER TABLE rules ADD COLUMN max_uses BIGINT;

DROP FUNCTION countersign_append(
    TEXT, TEXT, TEXT, TEXT[], TEXT[], TEXT[],
    TEXT, TEXT, TEXT, TEXT, TEXT,
    TEXT, TEXT, TEXT,
    TEXT, TEXT, TEXT, TEXT, TEXT, TEXT, TEXT, TEXT,
    TEXT, TEXT, TEXT, TEXT, TEXT,
    TEXT, TEXT, TEXT, TEXT, TEXT, DOUBLE PRECISION,
    TEXT[], TEXT[], TEXT[], TEXT[]
);

CREATE FUNCTION countersign_append(
    p_session       TEXT,
    p_instance      TEXT,
    p_at            TEXT,
    -- the events, without their seqs: each body is an event's JSON minus `"seq"`
    p_kinds         TEXT[],
    p_turns         TEXT[],
    p_bodies        TEXT[],
    -- a gate opened
    p_open_id       TEXT,
    p_open_turn     TEXT,
    p_open_request  TEXT,
    p_open_created  TEXT,
    p_open_expires  TEXT,
    -- a gate resolved, and the rule its answer made
    p_resolve_id    TEXT,
    p_resolution    TEXT,
    p_resolved_at   TEXT,
    p_rule_id       TEXT,
    p_rule_tool     TEXT,
    p_rule_pattern  TEXT,
    p_rule_scope    TEXT,
    p_rule_session  TEXT,
    p_rule_created  TEXT,
    p_rule_by       TEXT,
    p_rule_expires  TEXT,
    -- an outside agent's gate: who opened it, with which idempotency key
    p_ext_id        TEXT,
    p_ext_opened_by TEXT,
    p_ext_key       TEXT,
    p_ext_created   TEXT,
    p_ext_cutoff    TEXT,
    -- the use limit of the rule the answer made (NULL: none)
    p_rule_max_uses BIGINT,
    p_now           TEXT,
    -- a mode change
    p_set_mode      TEXT,
    -- the turn lease step: 'claim' | 'hold' | 'release'
    p_lease         TEXT,
    p_lease_turn    TEXT,
    p_lease_ttl     DOUBLE PRECISION,
    -- the audit entries the events call for
    p_audit_actors   TEXT[],
    p_audit_actions  TEXT[],
    p_audit_subjects TEXT[],
    p_audit_details  TEXT[]
) RETURNS BIGINT LANGUAGE plpgsql AS $$
DECLARE
    v_count BIGINT := coalesce(array_length(p_bodies, 1), 0);
    v_last  BIGINT;
    v_first BIGINT;
    v_found TEXT;
    v_gate_session TEXT;
    v_answered BOOLEAN;
BEGIN
    IF p_open_id IS NOT NULL THEN
        INSERT INTO approvals (approval_id, session_id, turn_id, request, created_at, expires_at)
        VALUES (p_open_id, p_session, p_open_turn, p_open_request, p_open_created, p_open_expires);
    END IF;

    IF p_resolve_id IS NOT NULL THEN
        -- The compare-and-set: only a pending gate takes an answer. The row is found by its
        -- key alone, so no plan can reach it through `approvals_pending` or
        -- `approvals_by_session`. Its session is checked before it is locked (another
        -- session's answer never waits on this gate's lock); the lock is the one an UPDATE
        -- takes, and a second answer waits for it, then reads the first one's resolution.
        SELECT session_id INTO v_gate_session FROM approvals WHERE approval_id = p_resolve_id;
        IF NOT FOUND OR v_gate_session IS DISTINCT FROM p_session THEN
            RAISE EXCEPTION USING ERRCODE = 'CS002', MESSAGE = p_resolve_id;
        END IF;
        SELECT resolution IS NOT NULL INTO v_answered
        FROM approvals WHERE approval_id = p_resolve_id FOR NO KEY UPDATE;
        IF NOT FOUND THEN
            -- Gone in between (its session was deleted).
            RAISE EXCEPTION USING ERRCODE = 'CS002', MESSAGE = p_resolve_id;
        END IF;
        IF v_answered THEN
            -- The winner's resolution is read back by the caller, not carried in the error:
            -- an error's message lands in the database's log.
            RAISE EXCEPTION USING ERRCODE = 'CS001', MESSAGE = p_resolve_id;
        END IF;
        UPDATE approvals SET resolution = p_resolution, resolved_at = p_resolved_at
        WHERE approval_id = p_resolve_id;
        IF p_rule_id IS NOT NULL THEN
            INSERT INTO rules (id, tool, pattern, scope, session_id, created_at,
                               created_by_approval, uses, expires_at, max_uses)
            VALUES (p_rule_id, p_rule_tool, p_rule_pattern, p_rule_scope, p_rule_session,
                    p_rule_created, p_rule_by, 0, p_rule_expires, p_rule_max_uses);
        END IF;
    END IF;

    IF p_ext_opened_by IS NOT NULL THEN
        IF p_ext_key IS NOT NULL THEN
            -- An older use of the key is forgotten.
            UPDATE external_gates SET idempotency_key = NULL
            WHERE opened_by = p_ext_opened_by AND idempotency_key = p_ext_key
              AND created_at < p_ext_cutoff;
        END IF;
        INSERT INTO external_gates (approval_id, opened_by, idempotency_key, created_at)
        VALUES (p_ext_id, p_ext_opened_by, p_ext_key, p_ext_created)
        ON CONFLICT (opened_by, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING;
        IF NOT FOUND THEN
            SELECT approval_id INTO v_found FROM external_gates
            WHERE opened_by = p_ext_opened_by AND idempotency_key = p_ext_key;
            IF v_found IS NULL THEN
                RAISE EXCEPTION USING ERRCODE = 'CS007', MESSAGE = p_ext_key;
            END IF;
            RAISE EXCEPTION USING ERRCODE = 'CS004', MESSAGE = v_found;
        END IF;
    END IF;

    -- The UPDATE locks the session row until the commit: appends to one session from any
    -- instance take their seqs one after the other.
    UPDATE sessions SET last_seq = last_seq + v_count,
        pre_plan_mode = CASE WHEN p_set_mode = 'plan' AND approval_mode <> 'plan'
                             THEN approval_mode ELSE pre_plan_mode END,
        plan_execution_mode = CASE WHEN p_set_mode IS NOT NULL AND p_set_mode <> 'plan'
                                        AND approval_mode = 'plan'
                                   THEN p_set_mode ELSE plan_execution_mode END,
        approval_mode = COALESCE(p_set_mode, approval_mode)
    WHERE id = p_session RETURNING last_seq INTO v_last;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'CS003', MESSAGE = p_session;
    END IF;
    v_first := v_last - v_count + 1;

    IF p_lease = 'claim' THEN
        INSERT INTO turn_leases (session_id, turn_id, owner, expires_at)
        VALUES (p_session, p_lease_turn, p_instance, now() + make_interval(secs => p_lease_ttl))
        ON CONFLICT (session_id) DO NOTHING;
        IF NOT FOUND THEN
            RAISE EXCEPTION USING ERRCODE = 'CS005', MESSAGE = p_session;
        END IF;
    ELSIF p_lease = 'hold' THEN
        PERFORM 1 FROM turn_leases
        WHERE session_id = p_session AND turn_id = p_lease_turn AND owner = p_instance
        FOR SHARE;
        IF NOT FOUND THEN
            RAISE EXCEPTION USING ERRCODE = 'CS006', MESSAGE = p_session;
        END IF;
    ELSIF p_lease = 'release' THEN
        DELETE FROM turn_leases
        WHERE session_id = p_session AND turn_id = p_lease_turn AND owner = p_instance;
        IF NOT FOUND THEN
            RAISE EXCEPTION USING ERRCODE = 'CS006', MESSAGE = p_session;
        END IF;
    END IF;

    -- Each body gets its seq written in front, as the wire has it: {"seq":N,"at":…}.
    INSERT INTO events (session_id, seq, kind, turn_id, at, body)
    SELECT p_session, v_first + e.i - 1, e.kind, e.turn, p_at,
           '{"seq":' || (v_first + e.i - 1) || ',' || substr(e.body, 2)
    FROM unnest(p_kinds, p_turns, p_bodies) WITH ORDINALITY AS e(kind, turn, body, i);

    INSERT INTO audit_pending (at, actor, action, subject, detail)
    SELECT p_now, a.actor, a.action, a.subject, a.detail
    FROM unnest(p_audit_actors, p_audit_actions, p_audit_subjects, p_audit_details)
         WITH ORDINALITY AS a(actor, action, subject, detail, i)
    ORDER BY a.i;

    RETURN v_first;
END;
$$;
