package wftest

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// FileResult is what the tests of one file did.
type FileResult struct {
	Path    string
	Err     error     // the file could not run: its problems (an ErrorList), or why
	Results []*Result // the tests that ran, in the file's order
	Updated int       // expectations --update rewrote
}

// Failed reports whether the file or one of its tests failed.
func (f *FileResult) Failed() bool {
	if f.Err != nil {
		return true
	}
	for _, r := range f.Results {
		if r.Failed() {
			return true
		}
	}
	return false
}

// failures counts the tests that failed.
func (f *FileResult) failures() int {
	n := 0
	for _, r := range f.Results {
		if r.Failed() {
			n++
		}
	}
	return n
}

// name is how output names a test: the test file without its extension,
// a slash, the test's name.
func (f *FileResult) name(t *Test) string {
	return strings.TrimSuffix(baseName(f.Path), Ext) + "/" + t.Name
}

func baseName(p string) string {
	if i := strings.LastIndexAny(p, `/\`); i >= 0 {
		return p[i+1:]
	}
	return p
}

// problems are the file's errors, one per place.
func (f *FileResult) problems() []*Error {
	var list ErrorList
	if errors.As(f.Err, &list) {
		return list
	}
	return []*Error{{File: f.Path, Line: 1, Col: 1, Msg: f.Err.Error()}}
}

// WriteText writes the results as `go test` does: each failed test with
// its failures at their lines, then ok or FAIL for each file. verbose
// lists every test.
func WriteText(w io.Writer, files []*FileResult, verbose bool) error {
	var b strings.Builder
	for _, f := range files {
		if f.Err != nil {
			for _, e := range f.problems() {
				fmt.Fprintf(&b, "%s\n", e)
			}
			fmt.Fprintf(&b, "FAIL\t%s\n", f.Path)
			continue
		}
		for _, r := range f.Results {
			name := f.name(r.Test)
			if verbose {
				fmt.Fprintf(&b, "=== RUN   %s\n", name)
			}
			switch {
			case r.Failed():
				fmt.Fprintf(&b, "--- FAIL: %s\n", name)
				for _, fl := range r.Failures {
					fmt.Fprintf(&b, "    %s:%d:%d: %s\n", f.Path, fl.Line, fl.Col, strings.ReplaceAll(fl.Msg, "\n", "\n    "))
				}
			case verbose:
				fmt.Fprintf(&b, "--- PASS: %s\n", name)
			}
		}
		total := fmt.Sprintf("%d %s", len(f.Results), plural(len(f.Results), "test", "tests"))
		if f.Updated > 0 {
			total += fmt.Sprintf(", %d %s updated", f.Updated, plural(f.Updated, "expectation", "expectations"))
		}
		if n := f.failures(); n > 0 {
			fmt.Fprintf(&b, "FAIL\t%s\t(%d of %s failed)\n", f.Path, n, total)
		} else {
			fmt.Fprintf(&b, "ok\t%s\t(%s)\n", f.Path, total)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// WriteGitHub writes a GitHub Actions error command at the place of each
// failure and problem, titled with the test's name.
func WriteGitHub(w io.Writer, files []*FileResult) error {
	var b strings.Builder
	for _, f := range files {
		if f.Err != nil {
			for _, e := range f.problems() {
				fmt.Fprintf(&b, "::error file=%s,line=%d,col=%d,title=%s::%s\n", ghProperty(e.File), e.Line, e.Col, ghProperty("aguic test"), ghData(e.Msg))
			}
			continue
		}
		for _, r := range f.Results {
			for _, fl := range r.Failures {
				fmt.Fprintf(&b, "::error file=%s,line=%d,col=%d,title=%s::%s\n", ghProperty(f.Path), fl.Line, fl.Col, ghProperty(f.name(r.Test)), ghData(fl.Msg))
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// ghData escapes a workflow command's message.
func ghData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

// ghProperty escapes a workflow command's property value.
func ghProperty(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}

// The JUnit XML that CI systems read: a suite per test file, a case per test.
type (
	junitSuites struct {
		XMLName  xml.Name     `xml:"testsuites"`
		Tests    int          `xml:"tests,attr"`
		Failures int          `xml:"failures,attr"`
		Errors   int          `xml:"errors,attr"`
		Time     string       `xml:"time,attr"`
		Suites   []junitSuite `xml:"testsuite"`
	}
	junitSuite struct {
		Name     string      `xml:"name,attr"`
		Tests    int         `xml:"tests,attr"`
		Failures int         `xml:"failures,attr"`
		Errors   int         `xml:"errors,attr"`
		Time     string      `xml:"time,attr"`
		Cases    []junitCase `xml:"testcase"`
	}
	junitCase struct {
		Name      string        `xml:"name,attr"`
		Classname string        `xml:"classname,attr"`
		File      string        `xml:"file,attr,omitempty"`
		Line      int           `xml:"line,attr,omitempty"`
		Time      string        `xml:"time,attr"`
		Failure   *junitProblem `xml:"failure,omitempty"`
		Error     *junitProblem `xml:"error,omitempty"`
	}
	junitProblem struct {
		Message string `xml:"message,attr"`
		Type    string `xml:"type,attr"`
		Text    string `xml:",chardata"`
	}
)

// WriteJUnit writes the results as JUnit XML: a testsuite per file, a
// testcase per test, a failure per failed test with each failure at its
// file:line:col, and an error case for a file that could not run.
func WriteJUnit(w io.Writer, files []*FileResult) error {
	all := junitSuites{}
	var total time.Duration
	for _, f := range files {
		s := junitSuite{Name: f.Path}
		var spent time.Duration
		if f.Err != nil {
			var lines []string
			for _, e := range f.problems() {
				lines = append(lines, e.Error())
			}
			s.Errors, s.Tests = 1, 1
			s.Cases = append(s.Cases, junitCase{
				Name: baseName(f.Path), Classname: f.Path, File: f.Path, Time: "0.000",
				Error: &junitProblem{Message: "the test file cannot run", Type: "error", Text: strings.Join(lines, "\n")},
			})
		}
		for _, r := range f.Results {
			spent += r.Elapsed
			c := junitCase{Name: r.Test.Name, Classname: f.Path, File: f.Path, Line: r.Test.Line, Time: seconds(r.Elapsed)}
			s.Tests++
			if r.Failed() {
				s.Failures++
				var lines []string
				for _, fl := range r.Failures {
					lines = append(lines, fmt.Sprintf("%s:%d:%d: %s", f.Path, fl.Line, fl.Col, fl.Msg))
				}
				c.Failure = &junitProblem{Message: firstLine(r.Failures[0].Msg), Type: "failure", Text: strings.Join(lines, "\n")}
			}
			s.Cases = append(s.Cases, c)
		}
		s.Time = seconds(spent)
		total += spent
		all.Tests += s.Tests
		all.Failures += s.Failures
		all.Errors += s.Errors
		all.Suites = append(all.Suites, s)
	}
	all.Time = seconds(total)
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(all); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
