package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestServeHelpModels: the help of serve says what start-up checks of the
// models (their providers' configuration) and what it does not (whether
// a model answers).
func TestServeHelpModels(t *testing.T) {
	var out, errOut bytes.Buffer
	if c := run([]string{"help", "serve"}, strings.NewReader(""), &out, &errOut); c != exitOK {
		t.Fatalf("help serve: exit %d, %s", c, errOut.String())
	}
	help := strings.Join(strings.Fields(out.String()), " ")
	if strings.Contains(help, "cannot reach its model is an error at start-up") {
		t.Error("the help says start-up reaches the models")
	}
	for _, want := range []string{
		"Start-up resolves the provider of each model node's model",
		"It does not call the models",
		"OPENAI_BASE_URL",
		"RUN_ERROR",
	} {
		if !strings.Contains(help, want) {
			t.Errorf("the help of serve lacks %q:\n%s", want, out.String())
		}
	}
}
