package main

import (
	"flag"
	"io"
	"strings"
	"testing"
)

// TestNodeEventsSetting: --node-events wins over AGUIC_NODE_EVENTS, which
// is read with strconv.ParseBool; neither means off, and a value that is
// not a boolean is an error that names the variable.
func TestNodeEventsSetting(t *testing.T) {
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
		c := serveCommand()
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		c.flags(fs)
		if err := fs.Parse(tt.args); err != nil {
			t.Fatal(err)
		}
		err := c.fromEnv(fs, func(name string) string {
			if name == "AGUIC_NODE_EVENTS" {
				return tt.env
			}
			return ""
		})
		got := fs.Lookup("node-events").Value.(flag.Getter).Get().(bool)
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("args %q, AGUIC_NODE_EVENTS=%q: %v, %v; want %v (error %v)", tt.args, tt.env, got, err, tt.want, tt.wantErr)
		}
		if err != nil && !strings.Contains(err.Error(), `AGUIC_NODE_EVENTS=yes: want true or false`) {
			t.Errorf("the error does not name the variable: %v", err)
		}
	}
}
