package stdlib

import (
	"errors"
	"fmt"
	"strings"

	"github.com/aguic/aguic/vm"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// compileSchema compiles a JSON Schema given as a value (draft 2020-12
// unless it names another). It may not load anything: a schema can come
// from the client, so a $ref must stay inside it.
func compileSchema(doc any) (*jsonschema.Schema, error) {
	const url = "mem:///schema.json"
	comp := jsonschema.NewCompiler()
	comp.DefaultDraft(jsonschema.Draft2020)
	comp.UseLoader(noLoader{})
	if err := comp.AddResource(url, vm.Normalize(doc)); err != nil {
		return nil, err
	}
	return comp.Compile(url)
}

// noLoader refuses to load schema documents from files or the network.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("cannot load %s: a schema may not refer to other documents", url)
}

// schemaError renders a schema error as one line: each failing place as
// "at /path: what is wrong".
func schemaError(err error) string {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return strings.ReplaceAll(err.Error(), "\n", " ")
	}
	var msgs []string
	var walk func(u jsonschema.OutputUnit)
	walk = func(u jsonschema.OutputUnit) {
		if len(u.Errors) == 0 && u.Error != nil {
			loc := u.InstanceLocation
			if loc == "" {
				loc = "/"
			}
			msgs = append(msgs, fmt.Sprintf("at %s: %s", loc, u.Error))
		}
		for _, e := range u.Errors {
			walk(e)
		}
	}
	walk(*ve.DetailedOutput())
	if len(msgs) == 0 {
		return strings.ReplaceAll(err.Error(), "\n", " ")
	}
	return strings.Join(msgs, "; ")
}
