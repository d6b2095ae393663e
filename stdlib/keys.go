package stdlib

import (
	"strings"

	"github.com/aguic/aguic/vm"
)

// keySource is the source of a node's key as written, spaces trimmed; ""
// when the node leaves it out.
func keySource(n *vm.Node, key string) string {
	if v := n.Keys[key]; v != nil {
		return strings.TrimSpace(v.Source)
	}
	return ""
}
