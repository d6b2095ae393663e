package storetest

import (
	"bytes"
	"fmt"

	"github.com/aguic/aguic/vm/store"
)

var sourceChecks = []check{
	{"RoundTrip", checkSourceRoundTrip},
	{"PutAgainIsNoOp", checkSourcePutAgain},
	{"NotFound", checkSourceNotFound},
}

// bigSource returns a workflow source of about n bytes.
func bigSource(n int) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "node n%d: llm \"say <<$context.x>> %d\"\n", i, i)
	}
	return b.Bytes()
}

func checkSourceRoundTrip(c *tc) {
	srcs := map[string][]byte{
		"sha256:aa": []byte("workflow chat:\n  start: llm \"hi\"\n"),
		"sha256:ab": []byte("workflow other:\n  start: end\n"),
		"sha256:ac": bigSource(256 << 10),
	}
	for h, src := range srcs {
		if err := c.s.PutSource(c.ctx, h, src); err != nil {
			c.Fatalf("PutSource(%q, %d bytes): %v", h, len(src), err)
		}
	}
	for h, want := range srcs {
		got, err := c.s.Source(c.ctx, h)
		if err != nil {
			c.Errorf("Source(%q): %v", h, err)
			continue
		}
		if !bytes.Equal(got, want) {
			c.Errorf("Source(%q): got %d bytes %.40q…, want the %d bytes %.40q… stored", h, len(got), got, len(want), want)
		}
	}
}

func checkSourcePutAgain(c *tc) {
	const h = "sha256:0123"
	first := []byte("workflow a:\n  start: end\n")
	if err := c.s.PutSource(c.ctx, h, first); err != nil {
		c.Fatalf("PutSource(%q): %v", h, err)
	}
	if err := c.s.PutSource(c.ctx, h, first); err != nil {
		c.Fatalf("PutSource(%q) again with the same source: %v", h, err)
	}
	// The contract: storing a hash again is a no-op, even with other bytes.
	if err := c.s.PutSource(c.ctx, h, []byte("something else")); err != nil {
		c.Fatalf("PutSource(%q) again with other bytes: %v, want nil (a no-op)", h, err)
	}
	got, err := c.s.Source(c.ctx, h)
	if err != nil {
		c.Fatalf("Source(%q): %v", h, err)
	}
	if !bytes.Equal(got, first) {
		c.Errorf("Source(%q) after storing the hash again: got %q, want the first source %q", h, got, first)
	}
}

func checkSourceNotFound(c *tc) {
	if err := c.s.PutSource(c.ctx, "sha256:aa", []byte("x")); err != nil {
		c.Fatalf("PutSource: %v", err)
	}
	for _, h := range []string{"sha256:ab", "sha256:a", "sha256:aaa", ""} {
		_, err := c.s.Source(c.ctx, h)
		c.wantErr(fmt.Sprintf("Source(%q) never stored", h), err, store.ErrNotFound)
	}
}
