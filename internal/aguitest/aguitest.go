// Package aguitest reads AG-UI events back, for the tests of a server.
//
// What goes in: the data of one server-sent event frame. What comes out:
// the event of package agui it holds, decoded into its Go type, or an
// error that says what is wrong with it. What stays true: every event
// type package agui builds can be read (the decoder is generated from the
// same struct tags as agui's encoders), and an event read back marshals
// to the bytes it was read from. The aguic binary does not import this
// package.
package aguitest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/aguic/aguic/server/agui"
)

// DecodeEvent reads one event of any type package agui builds, numbers
// kept exact as json.Number. It checks the JSON's shape, not what the
// protocol requires (a missing required field reads as empty).
func DecodeEvent(data []byte) (agui.Event, error) {
	var head struct {
		Type *string `json:"type"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("an event must be a JSON object: %v", err)
	}
	if head.Type == nil {
		return nil, errors.New("event has no type")
	}
	return decode(*head.Type, data)
}

// decodeAs reads data as an event of type T.
func decodeAs[T agui.Event](data []byte) (agui.Event, error) {
	var e T
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&e); err != nil {
		return nil, fmt.Errorf("%s: %s", e.EventType(), describe(err))
	}
	return e, nil
}

// describe words a decoding error: a type mismatch in plain terms.
func describe(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return fmt.Sprintf("%s: expected %s, found %s", te.Field, te.Type, te.Value)
	}
	return err.Error()
}
