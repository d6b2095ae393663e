-- compatible: 1
--
-- ThreadRuns: a thread's runs newest first, a page at a time from its
-- cursor, however many runs the thread has. Only an index: the aguic
-- before it goes on working.
CREATE INDEX runs_started ON runs (thread_id, started DESC, id);
