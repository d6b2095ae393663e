package main

import (
	"encoding/json"
	"flag"
	"net/http"
	"os"
	"strings"

	"github.com/aguic/aguic/server"
	"github.com/aguic/aguic/stdlib"
	"github.com/aguic/aguic/vm"
)

func openapiCommand() *command {
	c := &command{
		name:    "openapi",
		args:    "[--format json|yaml] [--downgrade] [--base-path path] [--tokens file] [--jwt-issuer url | --jwt-jwks-url url] [dir]",
		summary: "print the OpenAPI document of the server",
		doc: `
Openapi prints the OpenAPI 3.1 document that "aguic serve" serves at
/openapi.json (or, with --format yaml, at /openapi.yaml) for the same
workflows and flags, without starting a server or opening the data
directory: to generate a client, or to check the API into a repository.
The JSON is byte for byte what the server sends, then a newline.

dir is what serve takes (default workflows/); its .wf files are compiled
as serve compiles them, and errors in them end the command with their
diagnostics on standard error. Of serve's flags, only --base-path,
--tokens, --jwt-issuer and --jwt-jwks-url change the document (with tokens
or JWTs, every operation but the public ones requires a bearer token); the
others are not flags of openapi. --tokens reads the file, and the JWT flags
their URL, only to know that authentication is on: nothing is fetched.
AGUIC_TOKENS_FILE, AGUIC_TOKENS, AGUIC_JWT_ISSUER and AGUIC_JWT_JWKS_URL
count as they do for serve.`,
		examples: `
# The document of the examples, as the default server serves it.
aguic openapi workflows > openapi.json
# As YAML, for a server with tokens under another base path.
aguic openapi --format yaml --base-path /api/agui --tokens tokens.txt workflows`,
		exit: "0 on success, 1 when the sources have errors, 2 on a usage or I/O error.",
		vars: map[string]string{"format": "", "tokens": "AGUIC_TOKENS_FILE", "jwt-issuer": "AGUIC_JWT_ISSUER", "jwt-jwks-url": "AGUIC_JWT_JWKS_URL"},
	}
	c.flags = func(fs *flag.FlagSet) func(*env, []string) int {
		format := fs.String("format", "json", "output `format`: json or yaml")
		downgrade := fs.Bool("downgrade", false, "print the document converted to OpenAPI 3.0, as /openapi-3.0.json serves it, for older tools")
		basePath := server.DefaultBasePath
		basePathVar(fs, &basePath)
		tokens := fs.String("tokens", "", "document the bearer tokens serve --tokens requires, from this `file`")
		issuer := fs.String("jwt-issuer", "", "document the JWT bearer tokens serve --jwt-issuer requires (the `url` is not fetched)")
		jwks := fs.String("jwt-jwks-url", "", "document the JWT bearer tokens serve --jwt-jwks-url requires (the `url` is not fetched)")
		return func(e *env, args []string) int {
			if *format != "json" && *format != "yaml" {
				return usageError(e, c, "unknown format %q (want json or yaml)", *format)
			}
			if len(args) > 1 {
				return usageError(e, c, "too many arguments: openapi takes one directory, as serve does")
			}
			dir := defaultServeDir
			if len(args) == 1 {
				dir = args[0]
			}
			toks, err := loadTokens(*tokens, os.Getenv)
			if err != nil {
				for _, line := range strings.Split(err.Error(), "\n") {
					e.errorf("%s", line)
				}
				return exitUsage
			}
			prog, status := compile(e, []string{dir})
			if prog == nil {
				return status
			}
			cfg := server.Config{
				Machine:  &vm.Machine{Program: prog, Registry: stdlib.Registry()},
				BasePath: basePath,
			}
			switch {
			case toks != nil:
				cfg.Auth = toks.Auth
			case *issuer != "" || *jwks != "":
				// The document only needs to know that requests are
				// authenticated; it never authenticates one.
				cfg.Auth = func(*http.Request) (server.Identity, error) { return server.Identity{}, nil }
			}
			doc, err := server.OpenAPI(cfg)
			if err != nil {
				e.errorf("%v", err)
				return exitUsage
			}
			var out []byte
			switch {
			case *format == "yaml" && *downgrade:
				out, err = doc.DowngradeYAML()
			case *format == "yaml":
				out, err = doc.YAML()
			case *downgrade:
				out, err = doc.Downgrade()
				out = append(out, '\n')
			default:
				out, err = json.Marshal(doc)
				out = append(out, '\n')
			}
			if err != nil {
				e.errorf("%v", err)
				return exitUsage
			}
			if _, err := e.stdout.Write(out); err != nil {
				e.errorf("%v", err)
				return exitUsage
			}
			return exitOK
		}
	}
	return c
}
