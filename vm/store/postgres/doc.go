// Package postgres is a store.Store on PostgreSQL, for several aguic
// processes (replicas) that share one database: threads, event logs,
// runs, leases and workflow sources in the tables of one schema, and the
// processes telling each other what changed with LISTEN and NOTIFY. It
// uses pgx directly, with a small pool of connections per Store.
//
// # Configuring
//
// Open takes Options: the connection URL (a postgres:// URL or key=value
// pairs, with whatever pgx and pgxpool read in it: sslmode,
// connect_timeout, application_name, pool_min_conns…), the schema
// (default "aguic", created when missing), the size of the pool (default
// 8), the statement timeout (default 10s) and a logger. A field of
// Options that is set wins over the URL's setting (pool_max_conns,
// statement_timeout), which wins over the default; search_path is always
// the schema. Besides its pool, a Store holds one connection that
// listens. PostgreSQL's max_connections must leave room for every
// process's MaxConns+1.
//
// # Schema
//
// The migrations create, in the schema (migrations/0001_init.sql):
//
//   - threads: one row per thread, with its key (scope, workflow, thread;
//     unique, compared byte for byte, COLLATE "C"), its checkpoint's
//     bookkeeping (status, hash, wait, wake time, run id, sequence
//     numbers, version, how many deltas), its times and its lease (owner,
//     token, expiry). Its id, from an identity column, is never reused: a
//     thread deleted and made again is a new row, which nothing of the
//     old one (events, runs, deltas, a lease) can reach. A partial index
//     on the wake time serves Due. The row stays small, and a commit
//     that changes no indexed column rewrites it in place (HOT; the
//     table's fillfactor leaves room for it).
//   - frames: the serialized frame of each thread, rewritten only by a
//     commit whose checkpoint carries one.
//   - deltas: the frame deltas written since the frame, one row each,
//     numbered from 0: appending one writes one row.
//   - events: one row per event, keyed (thread id, seq).
//   - runs: one row per run, keyed (thread id, run id), with an index by
//     status for Runs and a partial index of the running and queued runs
//     for Pending and Stranded, which reads only those few.
//   - sources, tasks (TakeTask), syncs (Sync), migrations, and the
//     sequence lease_tokens.
//
// There are no foreign keys: every write to a thread's rows is made while
// the thread's row is locked (a commit locks it FOR UPDATE, Enqueue FOR
// KEY SHARE), and DeleteThread and Sweep remove a thread's rows in the
// transaction that deletes its row, after locking it; so no row is left
// without its thread, and commits do not pay for a check per event.
//
// Keys are kept in a unique B-tree index, whose entries PostgreSQL limits
// to about 2,700 bytes (after compression): a key longer than that cannot
// be stored.
//
// # Commits
//
// A Commit is one statement, a call of the PL/pgSQL function commit_v2
// (commit_v1, then, with Commit.Release, the lease given up under the
// same lock), in a transaction of its own: one round trip to the server (after the
// first on each connection, which prepares the statement). The function
// locks the thread's row, checks the lease and the expected version,
// marks the hidden events, appends the events after the last sequence
// number (from arrays, one INSERT), writes the run, the checkpoint, the
// frame and the deltas, and updates the row. A failed check raises an
// error of class AG, which rolls the statement's transaction back: a
// commit refused with store.ErrLeaseLost, ErrConflict or ErrRunExists
// writes nothing and uses up no sequence number. Sequence numbers have no
// gaps because concurrent commits to a thread take its row's lock in
// turn. A function rather than a statement of data-modifying CTEs: its
// steps run in order, each seeing the one before (a CTE's all see one
// snapshot, and cannot both trim and append deltas), and it says which
// check failed; rather than a pipelined batch of statements: the server
// stops at the first failed check, and the batch would still need a way
// to fail a transaction on a condition. Its name carries a version, so a
// later schema that changes it adds a new version beside it, for the
// aguic of the version before to go on calling its own: migration 0002
// added commit_v2 and kept commit_v1.
//
// Cost grows with what changed: the thread's small row, one row per event
// and per delta, the frame only when a checkpoint carries one, the run's
// row when there is one.
//
// # Durability
//
// A commit returns once PostgreSQL has committed it, which with the
// server's default synchronous_commit (on) means its write-ahead log is
// flushed to disk: a power loss cannot lose it. A Lazy commit sets
// synchronous_commit to off for its own transaction: it returns before
// the flush, and a crash of the server (not of aguic) may lose it and the
// lazy commits before it; PostgreSQL flushes it within a fraction of a
// second anyway (wal_writer_delay). Sync writes one row synchronously:
// the flush of the log up to that write carries every commit before it,
// lazy ones included. PostgreSQL makes concurrent commits share their
// flushes.
//
// # Leases and fencing
//
// A lease is three columns of the thread's row, and every time is the
// database's (now()), never a process's clock: replicas whose clocks
// differ agree on who holds a lease, and on when one expired. Acquire is
// one INSERT … ON CONFLICT DO UPDATE that takes the lease when it is free,
// expired or the caller's own; of concurrent Acquires one takes the row's
// lock first and the others then find the lease held. Every grant has a
// new token from the sequence lease_tokens, so tokens only grow, across
// deletions and restarts. A Commit, Renew or Release with a lease whose
// owner and token are not the row's fails with store.ErrLeaseLost and
// writes nothing. An expired lease that nobody took over still commits.
//
// # Notifications
//
// Watch, Cancel and OnCancel are those of a store.Hub, fed by PostgreSQL's
// notifications on a channel of the schema (bus.go). A Store listens on a
// connection of its own, outside its pool, and passes what it hears to
// its Hub. It wakes its own watchers at once, and notifies the others
// after its transaction committed: a NOTIFY inside the commit's
// transaction would make every notifying commit wait for the one before
// it, its flush to disk included, on the server's lock of the
// notification queue. The changes wait in an outbox, coalesced by thread,
// and one goroutine sends all that is there in one statement (SELECT
// pg_notify(…) FROM unnest(…)), at once when nothing is being sent, and
// what arrived meanwhile right after: a watcher in another process hears
// of a commit, a release, an enqueue or a deletion within milliseconds. A
// payload is a JSON array (kind, sender, the key's parts, the run id of a
// cancel request), which no key can be confused with; a change whose
// payload would not fit in PostgreSQL's 8,000 bytes, or a batch of more
// than a thousand threads, is sent as one notification that wakes every
// watcher. When the listening connection breaks, the Store connects it
// again, with pauses that grow to 2s, and then wakes every watcher: they
// read again what they may have missed.
//
// TakeTask is one INSERT … ON CONFLICT DO UPDATE on the task's row, by
// the database's clock: of concurrent callers, in any process, exactly
// one finds the period over.
//
// # Backup
//
// Backup and Restore write and read the backup format of package store
// (store.WriteBackup over Dump, store.ReadBackup into Load): a backup of
// this store restores into a Badger store and the other way round, and
// store.Copy copies between them (backup.go).
//
// Dump reads in one REPEATABLE READ, READ ONLY transaction: everything it
// gives is as of its first statement, while commits go on beside it and
// do not wait for it. It reads in pages, by key (sources by hash, 16 at a
// time; threads by key, byte order, 100 at a time with their frames and
// deltas; each thread's events from FirstSeq to LastSeq, 1,000 at a
// time; its runs by id, 100 at a time; the first page of a thread's
// events and of its runs in one round trip), and reads each page whole
// before the sink sees it: it holds one page, and a slow writer of the
// backup makes no statement run long (the transaction lifts the server's
// idle_in_transaction_session_timeout; ctx bounds it). The snapshot holds
// back the removal of dead rows (VACUUM) while it lasts.
//
// Load writes in one transaction. It first locks the tables threads and
// sources (SHARE ROW EXCLUSIVE), which waits for the writes under way and
// makes every write to them wait for it, in every process: another Load,
// an Acquire that would create a thread, a PutSource, a Release (each up
// to its statement timeout); reads go on, and see the store empty until
// the Load commits. Then it checks that neither table has a row: a store
// whose threads were all deleted is empty, since a deletion leaves
// nothing of its thread. It buffers the rows as the items come and writes
// them with COPY, 5,000 rows or 4 MiB at a time; each thread has a new id
// from the identity column's sequence, so no id is ever reused, and COPY
// writes it into the column. The restored threads have no lease (no
// owner, token 0), and lease_tokens never goes back: every token granted
// after the restore is above every one granted before it. When fill
// fails, the sink fails (a key too long for its index, a string with a
// NUL byte, which text cannot hold) or ctx is done, the transaction rolls
// back, and the store is as empty and usable as before. After its commit
// Load wakes every watcher, in this process and in the others. Times keep
// microseconds: those of a Badger store's backup lose their nanoseconds.
//
// # Errors
//
// Every error names the operation and the thread. A connection that
// cannot be made or broke, a server that is shutting down or starting,
// a statement that ran past the statement timeout: these wrap
// store.ErrUnavailable, with PostgreSQL's or the network's error in the
// message, and nothing was written (except that a commit whose connection
// broke after the server received it may have been committed, as with
// any database). The pool replaces broken connections by itself: calls
// succeed again once the server is back. A call whose context is done
// fails with an error that wraps the context's error.
//
// # Migrations and rolling upgrades
//
// The migrations are embedded in the binary (migrations/NNNN_name.sql),
// and Open applies those the database lacks in one transaction that holds
// an advisory lock of the schema: of several replicas that start at once,
// one migrates and the others wait for it and find the schema up to date.
// The table migrations records each version applied and its compatible
// version, the oldest schema version an aguic must know to use the
// database (each file's first line says it: "-- compatible: N"). During a
// rolling upgrade, two adjacent versions of aguic share the database: the
// new one migrates, and the old one goes on as long as the new schema is
// compatible with it. An aguic that finds the database's schema needs a
// newer one than itself refuses to open it, saying both versions.
package postgres
