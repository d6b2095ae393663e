package store_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aguic/aguic/internal/golden"
	"github.com/aguic/aguic/vm/store"
)

// backupStore is a store's contents in backup order, and a Dumper and a
// Restorer of them.
type backupStore struct {
	Sources []backupSource
	Threads []*backupThread
	// loads counts the calls of Load that got to fill.
	loads int
}

type backupSource struct {
	Hash string
	Src  []byte
}

type backupThread struct {
	T      store.Thread
	Events []store.Event
	Runs   []store.Run
}

func (b *backupStore) Dump(ctx context.Context, sink store.Sink) error {
	for _, s := range b.Sources {
		if err := sink.Source(s.Hash, s.Src); err != nil {
			return err
		}
	}
	for _, th := range b.Threads {
		if err := sink.Thread(th.T); err != nil {
			return err
		}
		for _, e := range th.Events {
			if err := sink.Event(e); err != nil {
				return err
			}
		}
		for _, r := range th.Runs {
			if err := sink.Run(r); err != nil {
				return err
			}
		}
	}
	return ctx.Err()
}

func (b *backupStore) Load(ctx context.Context, fill func(store.Sink) error) error {
	if len(b.Sources) > 0 || len(b.Threads) > 0 {
		return store.ErrNotEmpty
	}
	b.loads++
	staged := &backupStore{}
	if err := fill(staged); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	b.Sources, b.Threads = staged.Sources, staged.Threads
	return nil
}

func (b *backupStore) Source(hash string, src []byte) error {
	b.Sources = append(b.Sources, backupSource{hash, src})
	return nil
}

func (b *backupStore) Thread(t store.Thread) error {
	b.Threads = append(b.Threads, &backupThread{T: t})
	return nil
}

func (b *backupStore) Event(e store.Event) error {
	th := b.Threads[len(b.Threads)-1]
	th.Events = append(th.Events, e)
	return nil
}

func (b *backupStore) Run(r store.Run) error {
	th := b.Threads[len(b.Threads)-1]
	th.Runs = append(th.Runs, r)
	return nil
}

func (b *backupStore) empty() bool { return len(b.Sources) == 0 && len(b.Threads) == 0 }

// sample is a store that holds a little of everything: binary sources and
// strings that are not UTF-8, a thread whose first events were removed, a
// thread never committed to, frames with deltas, waits and wake times,
// silent and hidden events, runs with and without input, outcome and error,
// times at both ends of the range a backup holds.
func sample() *backupStore {
	at := func(sec, nsec int64) time.Time { return time.Unix(sec, nsec).UTC() }
	k1 := store.Key{Scope: "acme", Workflow: "chat", Thread: "t1"}
	k2 := store.Key{Scope: "acme", Workflow: "chat", Thread: "t2"}
	k3 := store.Key{Scope: "zeta\xff", Workflow: "w/ü", Thread: "t\x00"}
	return &backupStore{
		Sources: []backupSource{
			{"sha256:aa", []byte("wf 1\nworkflow chat {}\n")},
			{"sha256:bb", []byte{0, 0xff, 0xfe, '\n'}},
		},
		Threads: []*backupThread{
			{
				T: store.Thread{
					Key: k1, Status: store.Suspended, Hash: "sha256:aa",
					Frame:  []byte(`{"v":1,"node":"ask"}`),
					Deltas: [][]byte{[]byte(`{"d":1}`), nil, []byte(`{"d":3}`)},
					Wait:   []byte(`{"interrupt":"approve"}`), WakeAt: at(1767225600, 123000000),
					RunID: "r1", FirstSeq: 3, LastSeq: 6, Version: 4,
					Created: at(1767225000, 1), Updated: at(1767225500, 999999999),
				},
				Events: []store.Event{
					{Seq: 3, RunID: "r1", Time: at(1767225001, 5000), Data: []byte(`{"type":"RUN_STARTED"}`)},
					{Seq: 4, RunID: "r1", Time: at(1767225002, 0), Silent: true, Data: []byte(`{"type":"STATE_SNAPSHOT"}`)},
					{Seq: 5, RunID: "r1", Time: at(1767225003, 0), Hidden: true, Data: []byte("not json \x00\xff")},
					{Seq: 6, RunID: "r1", Time: at(1767225004, 0), Silent: true, Hidden: true},
				},
				Runs: []store.Run{
					{ID: "r1", Key: k1, Status: store.Suspended, Started: at(1767225001, 0), Finished: at(1767225004, 7), Outcome: []byte(`{"status":"suspended"}`), Input: []byte(`{"messages":[]}`)},
					{ID: "r2", Key: k1, Status: store.Queued, Started: at(1767225005, 0), Input: []byte(`{"resume":{"ok":true}}`)},
				},
			},
			{T: store.Thread{Key: k2, Created: at(1767225100, 0), Updated: at(1767225100, 0)}},
			{
				T: store.Thread{
					Key: k3, Status: store.Failed, Hash: "sha256:bb", Frame: []byte{1, 2, 3},
					RunID: "r\xfe", FirstSeq: 1, LastSeq: 1, Version: 1,
					Created: time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC), Updated: time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
				},
				Events: []store.Event{{Seq: 1, RunID: "r\xfe", Data: []byte(`{}`)}},
				Runs: []store.Run{
					{ID: "r\xfe", Key: k3, Status: store.Failed, Started: at(-1, 5), Error: "model: \xff\xfe is not UTF-8"},
				},
			},
		},
	}
}

// backup writes a backup of b.
func backup(t testing.TB, b store.Dumper) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := store.WriteBackup(t.Context(), &buf, b); err != nil {
		t.Fatalf("WriteBackup: %v", err)
	}
	return buf.Bytes()
}

// sameStore fails the test unless got holds what want does.
func sameStore(t *testing.T, got, want *backupStore) {
	t.Helper()
	if len(got.Sources) != len(want.Sources) || len(got.Threads) != len(want.Threads) {
		t.Fatalf("got %d sources and %d threads, want %d and %d", len(got.Sources), len(got.Threads), len(want.Sources), len(want.Threads))
	}
	for i := range want.Sources {
		if !reflect.DeepEqual(got.Sources[i], want.Sources[i]) {
			t.Errorf("source %d: got %+v, want %+v", i, got.Sources[i], want.Sources[i])
		}
	}
	for i := range want.Threads {
		if !reflect.DeepEqual(got.Threads[i], want.Threads[i]) {
			t.Errorf("thread %d:\ngot  %+v\nwant %+v", i, *got.Threads[i], *want.Threads[i])
		}
	}
}

// TestBackupGolden: the sample's backup is testdata/backup-2.bin byte for
// byte (go test -update rewrites it), and reads back as the sample. The
// file is what version 2 of the format is: a change to it is a new version.
func TestBackupGolden(t *testing.T) {
	got := backup(t, sample())
	path := filepath.Join("testdata", "backup-2.bin")
	if golden.Update() {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("the backup of the sample differs from %s: a change of the format needs a new version (go test -update accepts it)", path)
	}
	if !bytes.HasPrefix(want, []byte("aguic store backup 2\n")) {
		t.Errorf("the backup starts with %q", want[:min(len(want), 24)])
	}
	dst := &backupStore{}
	if err := store.ReadBackup(t.Context(), bytes.NewReader(want), dst); err != nil {
		t.Fatalf("ReadBackup: %v", err)
	}
	sameStore(t, dst, sample())
	// One store, one encoding.
	if again := backup(t, dst); !bytes.Equal(again, want) {
		t.Errorf("the backup of the restored store differs from the backup it was restored from")
	}
}

func TestBackupEmpty(t *testing.T) {
	b := backup(t, &backupStore{})
	dst := &backupStore{}
	if err := store.ReadBackup(t.Context(), bytes.NewReader(b), dst); err != nil {
		t.Fatalf("ReadBackup of an empty store's backup: %v", err)
	}
	if !dst.empty() || dst.loads != 1 {
		t.Errorf("restored %+v with %d loads", dst, dst.loads)
	}
}

func TestCopy(t *testing.T) {
	dst := &backupStore{}
	if err := store.Copy(t.Context(), dst, sample()); err != nil {
		t.Fatalf("Copy: %v", err)
	}
	sameStore(t, dst, sample())
	if err := store.Copy(t.Context(), dst, sample()); !errors.Is(err, store.ErrNotEmpty) {
		t.Errorf("Copy into a store that is not empty: got %v, want ErrNotEmpty", err)
	}
	bad := sample()
	bad.Threads[0].Events = bad.Threads[0].Events[1:]
	dst = &backupStore{}
	if err := store.Copy(t.Context(), dst, bad); err == nil || !strings.Contains(err.Error(), `event 4 of thread "acme/chat/t1" where event 3 was due`) {
		t.Errorf("Copy of a thread that misses an event: got %v", err)
	}
	if !dst.empty() {
		t.Errorf("a Copy that failed left %+v", dst)
	}
}

// TestWriteBackupChecks: a Dump that breaks the order, or gives a thread
// that is not whole, fails the backup, which then has no end record.
func TestWriteBackupChecks(t *testing.T) {
	for _, tt := range []struct {
		name string
		edit func(b *backupStore)
		want string
	}{
		{"SourcesOutOfOrder", func(b *backupStore) { b.Sources[0], b.Sources[1] = b.Sources[1], b.Sources[0] }, `source "sha256:aa" after source "sha256:bb"`},
		{"SourceTwice", func(b *backupStore) { b.Sources[1] = b.Sources[0] }, `source "sha256:aa" after source "sha256:aa"`},
		{"ThreadsOutOfOrder", func(b *backupStore) { b.Threads[0], b.Threads[1] = b.Threads[1], b.Threads[0] }, `thread "acme/chat/t1" after thread "acme/chat/t2"`},
		{"EventMissing", func(b *backupStore) { b.Threads[0].Events = b.Threads[0].Events[:3] }, `thread "acme/chat/t1" ends at event 5, its LastSeq is 6`},
		{"EventAfterLastSeq", func(b *backupStore) { b.Threads[0].T.LastSeq = 5 }, `event 6 of thread "acme/chat/t1", whose events end at LastSeq 5`},
		{"EventsOfANewThread", func(b *backupStore) { b.Threads[1].Events = b.Threads[2].Events }, `event 1 of thread "acme/chat/t2", whose events end at LastSeq 0`},
		{"FirstSeqWithoutEvents", func(b *backupStore) { b.Threads[1].T.FirstSeq = 1 }, `thread "acme/chat/t2" has FirstSeq 1 and no events`},
		{"FirstSeqPastLastSeq", func(b *backupStore) { b.Threads[0].T.FirstSeq = 8 }, `thread "acme/chat/t1" has FirstSeq 8 and LastSeq 6`},
		{"RunsOutOfOrder", func(b *backupStore) { r := b.Threads[0].Runs; r[0], r[1] = r[1], r[0] }, `run "r1" of thread "acme/chat/t1" after run "r2"`},
		{"RunOfAnotherThread", func(b *backupStore) { b.Threads[2].Runs[0].Key = b.Threads[0].T.Key }, `run "r\xfe" of thread "acme/chat/t1" among the runs of thread "zeta\xff/w/ü/t\x00"`},
		{"RunWithoutID", func(b *backupStore) { b.Threads[0].Runs[0].ID = "" }, `a run of thread "acme/chat/t1" has no id`},
		{"TimeOutOfRange", func(b *backupStore) { b.Threads[1].T.Updated = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) }, `outside the years 1 to 9999`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := sample()
			tt.edit(b)
			var buf bytes.Buffer
			err := store.WriteBackup(t.Context(), &buf, b)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("WriteBackup: got error %v, want one containing %q", err, tt.want)
			}
			if err := store.ReadBackup(t.Context(), &buf, &backupStore{}); err == nil {
				t.Errorf("ReadBackup of what the failed backup wrote succeeded")
			}
		})
	}
}

// TestReadBackupDamaged: a backup cut anywhere, with any one byte changed,
// or with anything after its end, fails to restore, and the store stays
// empty and takes a good backup after.
func TestReadBackupDamaged(t *testing.T) {
	good := backup(t, sample())
	try := func(t *testing.T, what string, data []byte) error {
		t.Helper()
		dst := &backupStore{}
		err := store.ReadBackup(t.Context(), bytes.NewReader(data), dst)
		if err == nil {
			t.Fatalf("%s: ReadBackup succeeded", what)
		}
		if !dst.empty() {
			t.Fatalf("%s: a failed ReadBackup (%v) left %+v", what, err, dst)
		}
		if err := store.ReadBackup(t.Context(), bytes.NewReader(good), dst); err != nil {
			t.Fatalf("%s: a good backup after a failed one: %v", what, err)
		}
		return err
	}
	header := len("aguic store backup 2\n")
	for n := range len(good) {
		err := try(t, fmt.Sprintf("cut at %d of %d bytes", n, len(good)), good[:n])
		if n >= header && !errors.Is(err, store.ErrMalformedBackup) {
			t.Errorf("cut at %d: got %v, want ErrMalformedBackup", n, err)
		}
		if n > header && !strings.Contains(err.Error(), "cut short") {
			t.Errorf("cut at %d: got %v, want it to say the backup is cut short", n, err)
		}
	}
	for i := range good {
		for _, bit := range []byte{0x01, 0x80} {
			bad := bytes.Clone(good)
			bad[i] ^= bit
			err := try(t, fmt.Sprintf("byte %d ^ %#x", i, bit), bad)
			if i >= header && !errors.Is(err, store.ErrMalformedBackup) {
				t.Errorf("byte %d ^ %#x: got %v, want ErrMalformedBackup", i, bit, err)
			}
		}
	}
	err := try(t, "a byte after the end", append(bytes.Clone(good), 0))
	if want := "malformed backup: data follows the end record"; err.Error() != want {
		t.Errorf("a byte after the end: got %q, want %q", err, want)
	}
}

// TestReadBackupErrors: what a failed ReadBackup says, and where.
func TestReadBackupErrors(t *testing.T) {
	thread := func(k store.Key, first, last uint64) []byte {
		return payload(str(k.Scope), str(k.Workflow), str(k.Thread), str("running"), str(""), str(""), str(""), uv(0), str(""), []byte{0}, uv(first), uv(last), uv(1), []byte{0}, []byte{0})
	}
	event := func(seq uint64) []byte { return payload(uv(seq), uv(0), str("r1"), []byte{0}, str("{}")) }
	run := func(id string) []byte {
		return payload(str(id), str("finished"), []byte{0}, []byte{0}, str(""), str(""), str(""))
	}
	k := store.Key{Scope: "s", Workflow: "w", Thread: "t"}
	for _, tt := range []struct {
		name string
		data []byte
		want string
	}{
		{"Empty", nil, "not an aguic store backup"},
		{"NotABackup", []byte("hello, world\n"), "not an aguic store backup"},
		{"NoNewline", []byte("aguic store backup 2"), "not an aguic store backup"},
		{"LeadingZero", []byte("aguic store backup 02\n"), "not an aguic store backup"},
		{"Format1", []byte("aguic store backup 1\n\x00\x00"), "the backup has format 1, Badger's own, which only a Badger store restores: restore it into a Badger data directory and take a new backup there"},
		{"Newer", []byte("aguic store backup 3\n"), "the backup has format 3, newer than this aguic reads (2)"},
		{"HeaderOnly", []byte("aguic store backup 2\n"), "malformed backup: the backup is cut short after its header"},
		{"NoEnd", backupOf(record('S', payload(str("h"), str("src")))), `malformed backup: the backup is cut short after record 1 (source "h"): it has no end record`},
		{"UnknownKind", backupOf(record('X', nil)), "malformed backup: record 1 is of an unknown kind (0x58)"},
		{"Damaged", backupOf(damaged(record('S', payload(str("h"), str("src"))))), "malformed backup: record 1 is damaged (its checksum does not match)"},
		{"Huge", []byte("aguic store backup 2\nS\x80\x80\x80\x80\x08"), "malformed backup: record 1 claims 2147483648 bytes, more than a record holds (1073741824)"},
		{"HugeCut", []byte("aguic store backup 2\nS\x80\x80\x80\x80\x04"), "malformed backup: the backup is cut short in record 1"},
		{"LongLength", []byte("aguic store backup 2\nS\x80\x00"), "malformed backup: record 1 has a malformed length"},
		{"FieldPastEnd", backupOf(record('S', payload(str("h"), uv(9)))), `malformed backup: record 1 (a source): a field runs past the end of its record`},
		{"BytesLeftOver", backupOf(record('S', payload(str("h"), str("s"), uv(0)))), `malformed backup: record 1 (a source): bytes follow the last field`},
		{"LongNumber", backupOf(record('T', thread(k, 0, 0)), record('E', payload([]byte{0x81, 0x00}, uv(0), str(""), []byte{0}, str(""))), end(0, 1, 1, 0)),
			`malformed backup: record 2 (an event of thread "s/w/t"): a malformed number`},
		{"BadTime", backupOf(record('T', thread(k, 1, 1)), record('E', payload(uv(1), uv(0), str(""), []byte{2}, str(""))), end(0, 1, 1, 0)),
			`malformed backup: record 2 (an event of thread "s/w/t"): a malformed time`},
		{"Nanoseconds", backupOf(record('T', thread(k, 1, 1)), record('E', payload(uv(1), uv(0), str(""), append([]byte{1, 2}, uv(1e9)...), str(""))), end(0, 1, 1, 0)),
			`malformed backup: record 2 (an event of thread "s/w/t"): a malformed time`},
		{"ZeroTimeSpelledOut", backupOf(record('T', thread(k, 1, 1)), record('E', payload(uv(1), uv(0), str(""), append([]byte{1}, binary.AppendVarint(nil, -62135596800)...), uv(0), str(""))), end(0, 1, 1, 0)),
			`malformed backup: record 2 (an event of thread "s/w/t"): a malformed time`},
		{"Flags", backupOf(record('T', thread(k, 1, 1)), record('E', payload(uv(1), uv(4), str(""), []byte{0}, str(""))), end(0, 1, 1, 0)),
			`malformed backup: record 2 (an event of thread "s/w/t"): unknown event flags 0x4`},
		{"Deltas", backupOf(record('T', payload(str(""), str(""), str(""), str(""), str(""), str(""), str(""), uv(1000)))),
			`malformed backup: record 1 (a thread): it claims more deltas than it holds`},
		{"SecondThreadMalformed", backupOf(record('T', thread(k, 0, 0)), record('T', payload(str("x")))),
			`malformed backup: record 2 (a thread after thread "s/w/t"): a field runs past the end of its record`},
		{"EventMissing", backupOf(record('T', thread(k, 1, 3)), record('E', event(1)), record('E', event(3)), end(0, 1, 2, 0)),
			`malformed backup: record 3 (event 3 of thread "s/w/t"): event 3 of thread "s/w/t" where event 2 was due`},
		{"EventsCutShort", backupOf(record('T', thread(k, 1, 3)), record('E', event(1)), record('R', run("r1")), end(0, 1, 1, 1)),
			`malformed backup: record 3 (run "r1" of thread "s/w/t"): thread "s/w/t" ends at event 1, its LastSeq is 3`},
		{"LastEventsMissing", backupOf(record('T', thread(k, 1, 3)), record('E', event(1)), end(0, 1, 1, 0)),
			`malformed backup: record 3 (the end record): thread "s/w/t" ends at event 1, its LastSeq is 3`},
		{"EventBeforeThread", backupOf(record('E', event(1)), end(0, 0, 1, 0)),
			`malformed backup: record 1 (event 1): event 1 before any thread`},
		{"RunsOutOfOrder", backupOf(record('T', thread(k, 0, 0)), record('R', run("b")), record('R', run("a")), end(0, 1, 0, 2)),
			`malformed backup: record 3 (run "a" of thread "s/w/t"): run "a" of thread "s/w/t" after run "b": runs come in order of id, once each`},
		{"SourceAfterThread", backupOf(record('T', thread(k, 0, 0)), record('S', payload(str("h"), str(""))), end(1, 1, 0, 0)),
			`malformed backup: record 2 (source "h"): source "h" after a thread: sources come first`},
		{"Counts", backupOf(record('T', thread(k, 1, 1)), record('E', event(1)), end(0, 1, 2, 0)),
			"malformed backup: the end record counts 0 sources, 1 threads, 2 events and 0 runs; the backup holds 0, 1, 1 and 0"},
		{"Checksum", backupOf(record('S', payload(str("h"), str(""))), record('Z', payload(uv(1), uv(0), uv(0), uv(0), make([]byte, 32)))),
			"malformed backup: the backup's checksum does not match its end record: it was altered"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dst := &backupStore{}
			err := store.ReadBackup(t.Context(), bytes.NewReader(tt.data), dst)
			if err == nil || err.Error() != tt.want {
				t.Errorf("ReadBackup: got error\n\t%v\nwant\n\t%s", err, tt.want)
			}
			if !dst.empty() {
				t.Errorf("a failed ReadBackup left %+v", dst)
			}
		})
	}
}

// The pieces of hand-made backups.

func uv(n uint64) []byte { return binary.AppendUvarint(nil, n) }

func str(s string) []byte { return append(uv(uint64(len(s))), s...) }

func payload(fields ...[]byte) []byte { return bytes.Join(fields, nil) }

func record(kind byte, p []byte) []byte {
	head := append([]byte{kind}, uv(uint64(len(p)))...)
	table := crc32.MakeTable(crc32.Castagnoli)
	crc := crc32.Update(crc32.Update(0, table, head), table, p)
	return binary.BigEndian.AppendUint32(append(head, p...), crc)
}

// damaged changes the last byte of a record's payload.
func damaged(rec []byte) []byte {
	rec = bytes.Clone(rec)
	rec[len(rec)-5] ^= 1
	return rec
}

// end is an end record that backupOf completes with the checksum of what
// comes before it: a 0, then the counts.
func end(sources, threads, events, runs uint64) []byte {
	return append([]byte{0}, payload(uv(sources), uv(threads), uv(events), uv(runs))...)
}

// backupOf is a backup of the records after the header; it completes the
// end records that end made.
func backupOf(records ...[]byte) []byte {
	b := []byte("aguic store backup 2\n")
	for _, r := range records {
		if r[0] == 0 {
			sum := sha256.Sum256(b)
			r = record('Z', append(r[1:len(r):len(r)], sum[:]...))
		}
		b = append(b, r...)
	}
	return b
}

// TestBackupStreams: a backup streams from Dump to Load with a few records
// in memory: the restore has the first event of a thread of 100,000
// before the backup has read the rest from the store.
func TestBackupStreams(t *testing.T) {
	const n = 100_000
	src := &streamingDump{events: n}
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := store.WriteBackup(t.Context(), pw, src)
		pw.CloseWithError(err)
		done <- err
	}()
	dst := &countingLoad{dumped: &src.dumped}
	if err := store.ReadBackup(t.Context(), pr, dst); err != nil {
		t.Fatalf("ReadBackup: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("WriteBackup: %v", err)
	}
	if dst.events != n || !dst.kept {
		t.Fatalf("restored %d events (kept %v), want %d", dst.events, dst.kept, n)
	}
	if dst.dumpedAtFirst >= n/10 {
		t.Errorf("when the restore had the first event, the backup had read %d of the %d events from the store", dst.dumpedAtFirst, n)
	}
}

// streamingDump is a thread of many events, made as they are dumped.
type streamingDump struct {
	events int
	dumped atomic.Int64 // events given to the sink so far
}

func (d *streamingDump) Dump(ctx context.Context, sink store.Sink) error {
	k := store.Key{Scope: "s", Workflow: "w", Thread: "long"}
	if err := sink.Thread(store.Thread{Key: k, Status: store.Finished, FirstSeq: 1, LastSeq: uint64(d.events), Version: 1}); err != nil {
		return err
	}
	data := bytes.Repeat([]byte("x"), 200)
	for i := range d.events {
		d.dumped.Add(1)
		if err := sink.Event(store.Event{Seq: uint64(i + 1), RunID: "r", Data: data}); err != nil {
			return err
		}
	}
	return nil
}

// countingLoad counts what it is given and keeps nothing.
type countingLoad struct {
	dumped        *atomic.Int64
	dumpedAtFirst int64
	events        int
	kept          bool
}

func (c *countingLoad) Load(ctx context.Context, fill func(store.Sink) error) error {
	if err := fill(c); err != nil {
		return err
	}
	c.kept = true
	return nil
}

func (c *countingLoad) Source(string, []byte) error { return nil }
func (c *countingLoad) Thread(store.Thread) error   { return nil }
func (c *countingLoad) Run(store.Run) error         { return nil }

func (c *countingLoad) Event(store.Event) error {
	if c.events == 0 {
		c.dumpedAtFirst = c.dumped.Load()
	}
	c.events++
	return nil
}

// TestReadBackupCancelled: a restore whose context is cancelled in the
// middle fails with the context's error and keeps nothing.
func TestReadBackupCancelled(t *testing.T) {
	good := backup(t, sample())
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	r := &cancelling{data: good, at: len(good) / 2, cancel: cancel}
	dst := &backupStore{}
	if err := store.ReadBackup(ctx, r, dst); !errors.Is(err, context.Canceled) {
		t.Fatalf("ReadBackup: got %v, want context.Canceled", err)
	}
	if !dst.empty() || dst.loads != 1 {
		t.Errorf("a cancelled ReadBackup left %+v after %d loads", dst, dst.loads)
	}
	var buf bytes.Buffer
	if err := store.WriteBackup(ctx, &buf, sample()); !errors.Is(err, context.Canceled) {
		t.Errorf("WriteBackup with a cancelled context: got %v, want context.Canceled", err)
	}
}

// cancelling reads data a byte at a time and cancels after at bytes.
type cancelling struct {
	data   []byte
	at     int
	cancel func()
}

func (c *cancelling) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	if c.at--; c.at == 0 {
		c.cancel()
	}
	p[0] = c.data[0]
	c.data = c.data[1:]
	return 1, nil
}

// FuzzReadBackup: ReadBackup of any bytes fails with an error or restores
// a store whose backup is those bytes again; it never panics.
func FuzzReadBackup(f *testing.F) {
	good := backup(f, sample())
	f.Add(good)
	f.Add(backup(f, &backupStore{}))
	f.Add(good[:len(good)/2])
	f.Add([]byte("aguic store backup 2\nS\x80\x80\x80\x80\x04"))
	f.Add([]byte("aguic store backup 1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		dst := &backupStore{}
		err := store.ReadBackup(t.Context(), bytes.NewReader(data), dst)
		if err != nil {
			if !dst.empty() {
				t.Fatalf("a failed ReadBackup (%v) left %+v", err, dst)
			}
			return
		}
		if again := backup(t, dst); !bytes.Equal(again, data) {
			t.Fatalf("the backup of what was restored differs from the backup:\n%q\n%q", again, data)
		}
	})
}

// FuzzBackupRecords: the records of a backup, with their framing, CRCs and
// end record made right, so that the fuzzer reaches what their fields
// hold: ReadBackup fails with an error or restores a store whose backup is
// the same bytes again. The input is a list of records, each a kind, a
// length byte and a payload of that length.
func FuzzBackupRecords(f *testing.F) {
	unframe := func(b []byte) []byte {
		var out []byte
		b = b[len("aguic store backup 2\n"):]
		for len(b) > 0 && b[0] != 'Z' {
			n, size := binary.Uvarint(b[1:])
			p := b[1+size : 1+size+int(n)]
			if n < 256 {
				out = append(append(out, b[0], byte(n)), p...)
			}
			b = b[1+size+int(n)+4:]
		}
		return out
	}
	f.Add(unframe(backup(f, sample())))
	f.Add([]byte{'T', 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		var recs [][]byte
		var n [4]uint64
		for len(data) >= 2 {
			kind, size := data[0], min(int(data[1]), len(data)-2)
			recs = append(recs, record(kind, data[2:2+size]))
			if i := strings.IndexByte("STER", kind); i >= 0 {
				n[i]++
			}
			data = data[2+size:]
		}
		b := backupOf(append(recs, end(n[0], n[1], n[2], n[3]))...)
		dst := &backupStore{}
		if err := store.ReadBackup(t.Context(), bytes.NewReader(b), dst); err != nil {
			if !dst.empty() {
				t.Fatalf("a failed ReadBackup (%v) left %+v", err, dst)
			}
			return
		}
		if again := backup(t, dst); !bytes.Equal(again, b) {
			t.Fatalf("the backup of what was restored differs from the backup:\n%q\n%q", again, b)
		}
	})
}
