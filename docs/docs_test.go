// Package docs is oncegate's manual. Its test keeps the manual honest:
// every relative link in a tracked Markdown file leads somewhere, and no
// tracked file cites a document the repository does not ship.
package docs

import (
	"bufio"
	"bytes"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// trackedFiles are the repository's tracked files (git ls-files), as
// slash paths from its root, and the root as a path from this package.
// Without git the test is skipped, except in CI, where it fails.
func trackedFiles(t *testing.T) (root string, files []string) {
	t.Helper()
	root = ".."
	out, err := exec.Command("git", "-C", root, "ls-files", "-z").Output()
	if err != nil {
		msg := fmt.Sprintf("git ls-files: %v: the manual's checks need git and the repository's history", err)
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	for _, f := range strings.Split(string(out), "\x00") {
		if f != "" {
			files = append(files, f)
		}
	}
	return root, files
}

// linkPattern finds inline links and images, [text](target) and
// ![alt](target); refPattern a reference definition, [label]: target.
var (
	linkPattern = regexp.MustCompile(`!?\[[^\]]*\]\(([^()\s]*(?:\([^()\s]*\)[^()\s]*)*)(?:\s+"[^"]*")?\)`)
	refPattern  = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s*<?([^\s>]+)>?`)
	codeSpan    = regexp.MustCompile("`+[^`]*`+")
	schemeLike  = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)
	htmlAnchor  = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
	linkInText  = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
)

// link is one relative link of a Markdown file.
type link struct {
	line   int
	target string
}

// markdown is what the test reads of a Markdown file: its relative links
// and the anchors of its headings.
type markdown struct {
	links   []link
	anchors map[string]bool
}

// parseMarkdown reads src: links outside fenced code blocks and code
// spans, and the anchors GitHub gives its headings (and explicit
// <a id>/<a name> anchors).
func parseMarkdown(src []byte) markdown {
	md := markdown{anchors: map[string]bool{}}
	seen := map[string]int{}
	fence := ""
	sc := bufio.NewScanner(bytes.NewReader(src))
	sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimLeft(line, " ")
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fence = trimmed[:3]
			continue
		}
		for _, m := range htmlAnchor.FindAllStringSubmatch(line, -1) {
			md.anchors[m[1]] = true
		}
		if h, ok := heading(line); ok {
			a := anchor(h)
			if k := seen[a]; k > 0 {
				md.anchors[fmt.Sprintf("%s-%d", a, k)] = true
			} else {
				md.anchors[a] = true
			}
			seen[a]++
		}
		text := codeSpan.ReplaceAllString(line, "")
		for _, m := range linkPattern.FindAllStringSubmatch(text, -1) {
			md.links = append(md.links, link{n, m[1]})
		}
		if m := refPattern.FindStringSubmatch(text); m != nil {
			md.links = append(md.links, link{n, m[1]})
		}
	}
	return md
}

// heading is the text of an ATX heading line ("## Text").
func heading(line string) (string, bool) {
	s := strings.TrimLeft(line, " ")
	if len(line)-len(s) > 3 {
		return "", false
	}
	level := len(s) - len(strings.TrimLeft(s, "#"))
	if level < 1 || level > 6 || len(s) > level && s[level] != ' ' && s[level] != '\t' {
		return "", false
	}
	text := strings.TrimSpace(s[level:])
	text = strings.TrimSpace(strings.TrimRight(text, "#"))
	return text, true
}

// anchor is GitHub's anchor of a heading: its text as shown (links give
// their text, code its contents), lower case, each space a '-', and every
// character but letters, digits, marks, '-' and '_' dropped.
func anchor(h string) string {
	h = linkInText.ReplaceAllString(h, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// TestManual checks the tracked files (git ls-files): their Markdown
// links, and their citations.
func TestManual(t *testing.T) {
	root, files := trackedFiles(t)
	t.Run("Links", func(t *testing.T) { checkLinks(t, root, files) })
	t.Run("Citations", func(t *testing.T) { checkCitations(t, root, files) })
}

// checkLinks fails on a relative link in a tracked Markdown file that
// does not lead to a tracked file (or a folder holding one), or to a
// heading that file does not have.
func checkLinks(t *testing.T, root string, files []string) {
	tracked := map[string]bool{}
	for _, f := range files {
		if _, err := os.Stat(path.Join(root, f)); err != nil {
			continue // deleted in the working tree: its deletion is not committed yet
		}
		tracked[f] = true
		for d := path.Dir(f); d != "."; d = path.Dir(d) {
			tracked[d+"/"] = true
		}
	}
	parsed := map[string]markdown{}
	read := func(f string) (markdown, error) {
		if md, ok := parsed[f]; ok {
			return md, nil
		}
		src, err := os.ReadFile(path.Join(root, f))
		if err != nil {
			return markdown{}, err
		}
		parsed[f] = parseMarkdown(src)
		return parsed[f], nil
	}
	checked := 0
	for _, f := range files {
		if !strings.HasSuffix(f, ".md") || !tracked[f] {
			continue
		}
		md, err := read(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range md.links {
			if schemeLike.MatchString(l.target) || strings.HasPrefix(l.target, "//") {
				continue // a URL, not a path in the repository
			}
			checked++
			if msg := resolve(f, l.target, tracked, read); msg != "" {
				t.Errorf("%s:%d: link %q: %s", f, l.line, l.target, msg)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no relative links found in the tracked Markdown files: the test reads nothing")
	}
}

// resolve checks one link of file from; it returns what is wrong, or "".
func resolve(from, target string, tracked map[string]bool, read func(string) (markdown, error)) string {
	p, frag, _ := strings.Cut(target, "#")
	p, err := url.PathUnescape(p)
	if err != nil {
		return "not a valid path: " + err.Error()
	}
	if frag, err = url.PathUnescape(frag); err != nil {
		return "not a valid anchor: " + err.Error()
	}
	dest := from
	if p != "" {
		dest = path.Join(path.Dir(from), p)
		if dest == ".." || strings.HasPrefix(dest, "../") {
			return "leads outside the repository"
		}
		dir := strings.HasSuffix(p, "/")
		switch {
		case dir && !tracked[dest+"/"], !dir && !tracked[dest] && !tracked[dest+"/"]:
			return fmt.Sprintf("%s is not a tracked file or folder", dest)
		}
	}
	if frag == "" || !strings.HasSuffix(dest, ".md") {
		return ""
	}
	md, err := read(dest)
	if err != nil {
		return err.Error()
	}
	if !md.anchors[frag] {
		return fmt.Sprintf("%s has no heading with the anchor #%s", dest, frag)
	}
	return ""
}

// citation finds a reference to the specification the product is built
// to but does not ship: a path into its folder beside the repository, or
// one of its documents by name.
var citation = regexp.MustCompile(`\.\./(?:s)hared\b|\b(?:API|DESIGN|INTENTS|PROCESSES|ONEC-ODATA|STYLE)\.md\b`)

// digestBound are the tracked files allowed to keep a citation: the
// built-in intent definitions, whose every byte (their first-line comment
// too) goes into the digest each journal records of the definition an
// operation was accepted under. Rewording the comment would make every
// unfinished operation of that built-in INTENT_CHANGED after an upgrade.
var digestBound = regexp.MustCompile(`^server/intent/builtin/[^/]+\.yaml$`)

// checkCitations fails on a tracked file that cites the specification
// (its folder, API.md, DESIGN.md, …) instead of the manual in docs/,
// which ships with the product (digestBound files excepted).
func checkCitations(t *testing.T, root string, files []string) {
	var offenders []string
	for _, f := range files {
		if f == "docs/docs_test.go" || digestBound.MatchString(f) {
			continue // the pattern itself; a definition's bytes
		}
		src, err := os.ReadFile(path.Join(root, f))
		if err != nil || bytes.IndexByte(src, 0) >= 0 {
			continue // deleted in the working tree, or not text
		}
		var lines []string
		for n, line := range strings.Split(string(src), "\n") {
			if citation.MatchString(line) {
				lines = append(lines, fmt.Sprint(n+1))
			}
		}
		if len(lines) > 0 {
			offenders = append(offenders, f+":"+strings.Join(lines, ","))
		}
	}
	if len(offenders) > 0 {
		t.Fatalf("these tracked files cite the specification, which does not ship; cite docs/ instead (e.g. \"docs/api.md, section Answers\"):\n\t%s",
			strings.Join(offenders, "\n\t"))
	}
}

// TestAnchor pins the anchors GitHub gives headings, which links name.
func TestAnchor(t *testing.T) {
	t.Parallel()
	for h, want := range map[string]string{
		"Operation keys":                           "operation-keys",
		"The listener: TLS, proxies, rate limit":   "the-listener-tls-proxies-rate-limit",
		"How long a target may take: `settle_ms`":  "how-long-a-target-may-take-settle_ms",
		"1C over OData (kind `onec_odata`)":        "1c-over-odata-kind-onec_odata",
		"Your own intent (Своё намерение)":         "your-own-intent-своё-намерение",
		"Add `purchase_order.create_draft` to it":  "add-purchase_ordercreate_draft-to-it",
		"See [the manual](docs/README.md) — first": "see-the-manual--first",
	} {
		if got := anchor(h); got != want {
			t.Errorf("anchor(%q) = %q, want %q", h, got, want)
		}
	}
	md := parseMarkdown([]byte("# Notes\n\n```\n# not a heading\n```\n\n## Notes\n<a id=\"here\"></a> [a](x.md#y) `[b](z.md)`\n"))
	for _, a := range []string{"notes", "notes-1", "here"} {
		if !md.anchors[a] {
			t.Errorf("anchors %v lack %q", md.anchors, a)
		}
	}
	if md.anchors["not-a-heading"] {
		t.Error("a line in a fenced code block was read as a heading")
	}
	if got, want := fmt.Sprint(md.links), "[{8 x.md#y}]"; got != want {
		t.Errorf("links %s, want %s (none from a code span)", got, want)
	}
}
