package wftest

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// wftestBlock finds the ```aguic-test blocks of a Markdown page.
var wftestBlock = regexp.MustCompile("(?ms)^```aguic-test\n(.*?)^```$")

// TestDocsExamples parses every test file example of docs/testing.md: the
// format the page shows is the one Parse reads.
func TestDocsExamples(t *testing.T) {
	page := filepath.Join("..", "docs", "testing.md")
	data, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	blocks := wftestBlock.FindAllSubmatch(data, -1)
	if len(blocks) < 3 {
		t.Fatalf("%s: found %d aguic-test blocks, want the page's examples", page, len(blocks))
	}
	for i, b := range blocks {
		if _, err := Parse("example.wftest", b[1]); err != nil {
			t.Errorf("%s: example %d does not parse:\n%v", page, i+1, err)
		}
	}
}
