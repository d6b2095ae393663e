package main

import "testing"

func TestSplitSchema(t *testing.T) {
	for _, tt := range []struct{ in, connect, schema string }{
		{"postgres://u@h/db", "postgres://u@h/db", ""},
		{"postgres://u@h/db?search_path=tenant_a", "postgres://u@h/db", "tenant_a"},
		{"postgres://u@h/db?sslmode=disable&search_path=s&options=-c%20log_statement%3Dall", "postgres://u@h/db?sslmode=disable&options=-c%20log_statement%3Dall", "s"},
		{"postgres://u@h/db?pool_max_conns=4", "postgres://u@h/db?pool_max_conns=4", ""},
	} {
		connect, schema := splitSchema(tt.in)
		if connect != tt.connect || schema != tt.schema {
			t.Errorf("splitSchema(%q) = %q, %q; want %q, %q", tt.in, connect, schema, tt.connect, tt.schema)
		}
	}
}
