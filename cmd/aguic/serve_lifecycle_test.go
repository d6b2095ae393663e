package main

import (
	"flag"
	"io"
	"testing"
)

// TestBoolSetting: --node-events wins over AGUIC_NODE_EVENTS, which is
// read with strconv.ParseBool; neither means off.
func TestBoolSetting(t *testing.T) {
	tests := []struct {
		args    []string
		env     string
		want    bool
		wantErr bool
	}{
		{nil, "", false, false},
		{nil, "true", true, false},
		{nil, "1", true, false},
		{nil, "false", false, false},
		{nil, "yes", false, true},
		{[]string{"--node-events"}, "", true, false},
		{[]string{"--node-events=false"}, "true", false, false},
		{[]string{"--node-events"}, "yes", true, false},
	}
	for _, tt := range tests {
		t.Setenv("AGUIC_NODE_EVENTS", tt.env)
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		v := fs.Bool("node-events", false, "")
		if err := fs.Parse(tt.args); err != nil {
			t.Fatal(err)
		}
		got, err := boolSetting(fs, "node-events", *v, "AGUIC_NODE_EVENTS")
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("args %q, AGUIC_NODE_EVENTS=%q: %v, %v; want %v (error %v)", tt.args, tt.env, got, err, tt.want, tt.wantErr)
		}
	}
}
