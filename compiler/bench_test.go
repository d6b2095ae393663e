package compiler_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/aguic/aguic/compiler"
	"github.com/aguic/aguic/stdlib"
)

// corpus generates files of realistic workflows with at least minLines
// lines in all: conversation and stateless workflows, tools, templates,
// loops, branches, steps, parallel blocks and every common node kind.
func corpus(minLines int) (srcs []compiler.Source, lines int) {
	for f := 0; lines < minLines; f++ {
		var b strings.Builder
		b.WriteString("wf 1\n\n")
		for w := range 5 {
			id := fmt.Sprintf("wf_%d_%d", f, w)
			fmt.Fprintf(&b, `// Workflow %[1]s: generated for the compiler benchmark.
workflow %[1]s {
  title        = "Workflow %[1]s"
  description  = "Answers questions and keeps a todo list."
  conversation = true

  tool lookup_%[2]d {
    description = "Look up an order by id"
    parameters  = {type: "object", properties: {id: {type: "string"}}, required: ["id"]}
    http GET "<<env('ORDERS_URL')>>/orders/<<$args.id>>" { timeout = "5s" }
  }

  flow {
    set $input.chat = $input.chat ?? []
    set { $count = 0; $todos = []; $plan = {steps: [{title: "Start", status: "pending"}]} }
    triage: model {
      model   = "openai/gpt-4o-mini"
      system  = "Answer with exactly one word: refund or question."
      prompt  = "<<$agent.latestUserMessage.content>>"
      chat_in = $input.chat
      stream  = false
    } -> $triage
    if lower(trim($triage.text)) == "refund" && $count < 3 {
      confirm: frontend_tool "confirm_refund" {
        args    = {orderId: $agent.state?.order ?? "none", count: $count}
        persist = "none"
        on result { say "Thanks, your refund for <<$agent.state.order>> is on its way." }
        on other  { goto triage }
      } -> $approval
    } else if $count > 10 {
      say "That is a lot of questions: <<$count>> so far."
    } else {
      answer: model {
        prompt   = "<<$agent.latestUserMessage.content>>"
        chat_in  = $input.chat
        chat_out = $input.chat
        tools    = [lookup_%[2]d, $agent.tools]
      }
    }
    for item in $todos {
      set $count = $count + 1
      say "Item <<$count>>: <<item.title>> (<<item.done ? "done" : "open">>)"
    }
    while $count < 5 max 10 {
      set $count = $count + 1
    }
    step "Research" {
      parallel {
        branch docs { set $docs = {text: "docs for <<$triage.text>>"} }
        branch web {
          try {
            http GET "https://example.com/search?q=<<$triage.text>>" { retry = 2 } -> $web
          } catch err {
            set $web = {body: err.message}
          }
        }
      }
    }
    switch {
      case $count == 1 { emit "one" { value = {count: $count} } }
      case $count in [2, 3] { state sync }
      default { activity sync "plan" { type = "PLAN"; from = $plan } }
    }
    set $agent.state.todos = tail($todos + [{title: "Follow up", done: false}], 5)
    next_turn: suspend
    goto triage
  }
}

`, id, w)
		}
		text := b.String()
		srcs = append(srcs, compiler.Source{Name: fmt.Sprintf("gen%03d.wf", f), Text: []byte(text)})
		lines += strings.Count(text, "\n")
	}
	return srcs, lines
}

var (
	writeCorpus = flag.String("write-corpus", "", "write the benchmark corpus as .wf files into this directory")
	corpusLines = flag.Int("corpus-lines", 10_000, "the lines of the corpus -write-corpus writes, at least")
)

// TestCorpusChecks keeps the benchmark honest: the corpus must compile
// without a diagnostic, so the benchmark measures a full parse and check.
func TestCorpusChecks(t *testing.T) {
	srcs, lines := corpus(*corpusLines)
	if lines < *corpusLines {
		t.Fatalf("corpus has %d lines, want at least %d", lines, *corpusLines)
	}
	prog, diags := compiler.Compile(stdlib.Registry(), srcs...)
	if len(diags) > 0 || prog == nil {
		t.Fatalf("corpus does not check cleanly: %v", diags.Err())
	}
	if got, want := len(prog.Workflows), 5*len(srcs); got != want {
		t.Fatalf("got %d workflows, want %d", got, want)
	}
	if dir := *writeCorpus; dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, s := range srcs {
			if err := os.WriteFile(filepath.Join(dir, s.Name), s.Text, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		t.Logf("wrote %d files, %d lines, to %s", len(srcs), lines, dir)
	}
}

// BenchmarkCheckCorpus parses and checks a generated corpus of 10,000+
// lines in one Compile call, as `aguic check` does.
func BenchmarkCheckCorpus(b *testing.B) { benchCorpus(b, 10_000) }

// BenchmarkCheckCorpus100k checks a corpus of 100,000+ lines, and reports
// the heap in use once the program is built, per line of source.
func BenchmarkCheckCorpus100k(b *testing.B) {
	benchCorpus(b, 100_000)
	srcs, lines := corpus(100_000)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	prog, _ := compiler.Compile(stdlib.Registry(), srcs...)
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(prog)
	b.ReportMetric(float64(after.HeapInuse-min(before.HeapInuse, after.HeapInuse))/float64(lines), "heap-B/line")
}

func benchCorpus(b *testing.B, minLines int) {
	srcs, lines := corpus(minLines)
	reg := stdlib.Registry()
	bytes := 0
	for _, s := range srcs {
		bytes += len(s.Text)
	}
	b.SetBytes(int64(bytes))
	for b.Loop() {
		if _, diags := compiler.Compile(reg, srcs...); diags.HasErrors() {
			b.Fatal(diags.Err())
		}
	}
	b.ReportMetric(float64(lines)*float64(b.N)/b.Elapsed().Seconds(), "lines/s")
}
