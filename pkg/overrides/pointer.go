package overrides

import (
	"fmt"
	"strconv"
	"strings"
)

// Pointer is a parsed JSON pointer (RFC 6901): its reference tokens, unescaped.
type Pointer []string

// ParsePointer parses a JSON pointer such as /metadata/labels/app.kubernetes.io~1name.
// The empty pointer (the whole document) is rejected: an override cannot
// replace the whole object, and KubeFed could not apply one either.
func ParsePointer(s string) (Pointer, error) {
	if !strings.HasPrefix(s, "/") {
		if s == "" {
			return nil, fmt.Errorf("path %q: a JSON pointer must start with %q", s, "/")
		}
		return nil, fmt.Errorf("path %q: a JSON pointer must start with %q, such as %q", s, "/", SuggestPointer(s))
	}
	tokens := strings.Split(s[1:], "/")
	for i, tok := range tokens {
		if !strings.Contains(tok, "~") {
			continue
		}
		unescaped, err := unescape(tok)
		if err != nil {
			return nil, fmt.Errorf("path %q: %w", s, err)
		}
		tokens[i] = unescaped
	}
	return Pointer(tokens), nil
}

// SuggestPointer is the JSON pointer a path written without its leading
// slash most likely means: spec.replicas and spec/replicas are
// /spec/replicas, spec.template.spec.containers[0].image is
// /spec/template/spec/containers/0/image. The CRD schema's message for an
// override path gives the same suggestion.
func SuggestPointer(path string) string {
	path = strings.NewReplacer("[", ".", "]", "").Replace(path)
	var tokens []string
	for _, t := range strings.Split(path, ".") {
		if t != "" {
			tokens = append(tokens, t)
		}
	}
	return "/" + strings.Join(tokens, "/")
}

// unescape decodes ~1 to / and ~0 to ~; any other use of ~ is malformed.
// Decoding in one pass gets "~01" right (it is "~1", not "/").
func unescape(tok string) (string, error) {
	var b strings.Builder
	b.Grow(len(tok))
	for i := 0; i < len(tok); i++ {
		if tok[i] != '~' {
			b.WriteByte(tok[i])
			continue
		}
		if i+1 == len(tok) {
			return "", fmt.Errorf("token %q ends with %q; escape it as ~0", tok, "~")
		}
		switch tok[i+1] {
		case '0':
			b.WriteByte('~')
		case '1':
			b.WriteByte('/')
		default:
			return "", fmt.Errorf("token %q has %q; only ~0 and ~1 are valid escapes", tok, tok[i:i+2])
		}
		i++
	}
	return b.String(), nil
}

// String returns p in its escaped form, as it would be written in a manifest.
func (p Pointer) String() string {
	var b strings.Builder
	for _, tok := range p {
		b.WriteByte('/')
		if !strings.ContainsAny(tok, "~/") {
			b.WriteString(tok)
			continue
		}
		// ~ first, so that the ~ introduced by escaping / is not escaped again.
		b.WriteString(strings.ReplaceAll(strings.ReplaceAll(tok, "~", "~0"), "/", "~1"))
	}
	return b.String()
}

// Lookup returns the value p points to in doc (decoded JSON: maps, lists
// and scalars), and whether it is there.
func (p Pointer) Lookup(doc any) (any, bool) {
	node := doc
	for _, tok := range p {
		switch n := node.(type) {
		case map[string]any:
			v, ok := n[tok]
			if !ok {
				return nil, false
			}
			node = v
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(n) || (len(tok) > 1 && tok[0] == '0') {
				return nil, false
			}
			node = n[i]
		default:
			return nil, false
		}
	}
	return node, true
}
