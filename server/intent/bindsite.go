package intent

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/oncegate/oncegate/adapters"
	mapped "github.com/oncegate/oncegate/adapters/mapping"
)

// located names where in the firm's files a target's refusal of its
// intents is: each definition from a file is given to the target alone,
// and each it refuses is named by its file and the line of the path the
// refusal names (map.action, map.fields.X), as the loader names its own
// refusals. The target's bindings are left as the last of these: the
// gateway does not start after a refusal. It returns nil when no single
// definition is refused (the refusal is of them together).
func located(b adapters.Binder, defs []*Intent) []string {
	var out []string
	for _, def := range defs {
		err := b.Bind([]adapters.Binding{def.Binding()})
		if err == nil {
			continue
		}
		line := 0
		var me *mapped.Error
		if errors.As(err, &me) {
			line = lineOf(def.Source, me.Path)
		}
		if line > 0 {
			out = append(out, fmt.Sprintf("%s: line %d: %s", def.Source, line, err))
		} else {
			out = append(out, fmt.Sprintf("%s: %s", def.Source, err))
		}
	}
	return out
}

// lineOf is the line of the deepest key of the dotted path (map.fields.X)
// found in the YAML file, 0 when the file cannot be read.
func lineOf(file, path string) int {
	raw, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	var doc yaml.Node
	if yaml.Unmarshal(raw, &doc) != nil || len(doc.Content) == 0 {
		return 0
	}
	n, line := doc.Content[0], 0
	for _, seg := range strings.Split(path, ".") {
		next := (*yaml.Node)(nil)
		for i := 0; n.Kind == yaml.MappingNode && i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == seg {
				line, next = n.Content[i].Line, n.Content[i+1]
				break
			}
		}
		if next == nil {
			break
		}
		n = next
	}
	return line
}
