# The project's commands. `make test` is what CI runs (.ci/run).

GO ?= go
FUZZTIME ?= 15s

.PHONY: test deps chromium postgres unit vet lint-workflows editors vsix e2e fuzz bench build

## The PostgreSQL server of the tests of the PostgreSQL store and of several replicas:
## AGUIC_TEST_POSTGRES, else the local server when it answers (trust authentication).
PG_LOCAL := postgres://postgres@127.0.0.1:5432/test
ifeq ($(AGUIC_TEST_POSTGRES),)
AGUIC_TEST_POSTGRES := $(shell pg_isready -q -d '$(PG_LOCAL)' >/dev/null 2>&1 && echo '$(PG_LOCAL)')
endif
export AGUIC_TEST_POSTGRES

## test: every test, the checks of the example workflows and docs, the AG-UI conformance suite, and short fuzz runs
test: postgres vet unit lint-workflows editors e2e fuzz

## postgres: says whether the PostgreSQL tests run; in CI (CI set) they must
postgres:
	@if [ -n "$$AGUIC_TEST_POSTGRES" ]; then \
		echo "PostgreSQL tests run against $$AGUIC_TEST_POSTGRES"; \
	elif [ -n "$$CI" ]; then \
		echo "CI needs PostgreSQL, and none answers at $(PG_LOCAL): start it, or name one with AGUIC_TEST_POSTGRES=postgres://user@host:5432/db"; exit 1; \
	else \
		echo "PostgreSQL tests skipped: none answers at $(PG_LOCAL); run them with AGUIC_TEST_POSTGRES=postgres://user@host:5432/db make test"; \
	fi

## deps: the Node packages of e2e/: the official AG-UI client, and aimock, the mock model API of the unit tests;
## and of the CopilotKit apps: e2e/copilotkit/, the example app, and e2e/dojo/, the dojo's pages;
## and of the VS Code extension, editors/vscode/: its language client, the grammar's test runner and vsce
deps:
	cd e2e && npm ci --no-audit --no-fund --loglevel=error
	cd e2e/copilotkit && npm ci --no-audit --no-fund --loglevel=error
	cd e2e/dojo && npm ci --no-audit --no-fund --loglevel=error
	cd editors/vscode && npm ci --no-audit --no-fund --loglevel=error

## chromium: the browser of the studio's tests (e2e/studio.test.mjs): nothing when /usr/bin/chromium
## exists (or CHROMIUM names another binary), else Debian's package, with apt-get (as root, or with sudo)
chromium:
	@if [ -x "$${CHROMIUM:-/usr/bin/chromium}" ]; then exit 0; fi; \
	sudo=""; if [ "$$(id -u)" != 0 ]; then sudo=sudo; fi; \
	if ! command -v apt-get >/dev/null 2>&1; then \
		echo "the studio's tests need Chromium at /usr/bin/chromium, and there is no apt-get to install it: install it, or set CHROMIUM to a Chromium binary"; exit 1; \
	fi; \
	$$sudo apt-get update && $$sudo apt-get install -y chromium || { \
		echo "installing Chromium failed: the studio's tests need it at /usr/bin/chromium (apt-get install chromium, as root)"; exit 1; }

## unit: go test over every package, and the race detector over the packages that run concurrently;
## AGUIC_REQUIRE_AIMOCK=1 fails, rather than skips, the tests that need aimock when it cannot run
unit: deps
	AGUIC_REQUIRE_AIMOCK=1 $(GO) test ./...
	AGUIC_REQUIRE_AIMOCK=1 $(GO) test -race -short ./vm/... ./stdlib/... ./server/...

vet:
	$(GO) vet ./...
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt would change:"; echo "$$unformatted"; exit 1; fi

## lint-workflows: `aguic check`, `aguic fmt -l` and `aguic test` over the example workflows
## (GitHub annotations at failed tests when run by GitHub Actions)
lint-workflows:
	$(GO) run ./cmd/aguic check workflows
	$(GO) run ./cmd/aguic test $(if $(GITHUB_ACTIONS),--format github) workflows
	@out=$$($(GO) run ./cmd/aguic fmt -l workflows); \
	if [ -n "$$out" ]; then echo "aguic fmt would change:"; echo "$$out"; exit 1; fi

## editors: the TextMate grammar's scope tests (editors/vscode/test/grammar) and its snapshots of
## every example workflow (editors/vscode/test/snapshots: `cd editors/vscode && npm run
## update:snapshots` rewrites them), and the VS Code extension packaged, which checks its manifest
editors: deps vsix
	cd editors/vscode && npm test

## vsix: the VS Code extension, editors/vscode/aguic-wf.vsix (`code --install-extension` installs it)
vsix: editors/vscode/node_modules
	cd editors/vscode && npm run package

editors/vscode/node_modules: editors/vscode/package-lock.json
	cd editors/vscode && npm ci --no-audit --no-fund --loglevel=error

## e2e: the AG-UI conformance suite: aguic serve driven by the official client (Node), and the
## studio driven in a headless Chromium
e2e: deps chromium
	cd e2e && npm test

## fuzz: run each fuzz target for FUZZTIME
fuzz:
	$(GO) test ./lang -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 5s
	$(GO) test ./lang -run '^$$' -fuzz '^FuzzFormat$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 5s
	$(GO) test ./stdlib/llm -run '^$$' -fuzz '^FuzzParseScript$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 5s
	$(GO) test ./mcplock -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 5s
	$(GO) test ./wftest -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 5s
	$(GO) test ./lsp -run '^$$' -fuzz '^FuzzCursor$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 5s

## bench: every benchmark, once
bench:
	$(GO) test ./... -run '^$$' -bench . -benchmem

build:
	$(GO) build -o bin/aguic ./cmd/aguic
