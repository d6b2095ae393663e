package server

import (
	"github.com/danielgtaylor/huma/v2"

	"github.com/aguic/aguic/vm/store"
)

// OpenAPI returns the OpenAPI 3.1 document a server for cfg serves at
// /openapi.json and /openapi.yaml, without a listener and without a
// store: it builds the server's routes and nothing else, so cfg.Store
// may be nil, and cfg.Bundle is not stored. json.Marshal of the document
// gives the bytes of /openapi.json, its YAML method those of
// /openapi.yaml.
func OpenAPI(cfg Config) (*huma.OpenAPI, error) {
	cfg.Bundle = nil
	if cfg.Store == nil {
		cfg.Store = noStore{}
	}
	s, err := New(cfg)
	if err != nil {
		return nil, err
	}
	s.stop()
	return s.api.OpenAPI(), nil
}

// noStore is the store of a server built for its document only: nothing
// runs, so none of its methods is called but OnCancel, which New calls.
type noStore struct{ store.Store }

func (noStore) OnCancel(func(store.Key, string)) func() { return func() {} }
