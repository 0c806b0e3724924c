package structured

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/tools"
)

func newTestWorkspace(t *testing.T) *tools.Workspace {
	t.Helper()
	ws, err := tools.NewWorkspace(t.TempDir())
	require.NoError(t, err)
	return ws
}

func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
}

func call(t *testing.T, tool tools.Tool, args any) (string, error) {
	t.Helper()
	raw, err := json.Marshal(args)
	require.NoError(t, err)
	return tool.Call(context.Background(), raw)
}

func TestJSONAndYAMLReadWithKeyPaths(t *testing.T) {
	ws := newTestWorkspace(t)
	writeFiles(t, ws.Root(), map[string]string{
		"c.json": `{"servers": [{"port": 8080}, {"port": 9090}], "name": "x"}`,
		"c.yaml": "servers:\n  - port: 8080\n  - port: 9090\nname: x\n",
	})
	for _, c := range []struct {
		tool tools.Tool
		path string
	}{{JSONRead(ws), "c.json"}, {YAMLRead(ws), "c.yaml"}} {
		out, err := call(t, c.tool, StructuredReadArgs{Path: c.path, Key: "servers.1.port"})
		require.NoError(t, err)
		require.Equal(t, "9090", out)
		out, err = call(t, c.tool, StructuredReadArgs{Path: c.path, Key: "name"})
		require.NoError(t, err)
		require.Equal(t, `"x"`, out)
		_, err = call(t, c.tool, StructuredReadArgs{Path: c.path, Key: "servers.5.port"})
		var ke *KeyPathError
		require.ErrorAs(t, err, &ke)
		require.Equal(t, "5", ke.At)
	}
}

func TestStructuredReadRejectsInvalidDocuments(t *testing.T) {
	ws := newTestWorkspace(t)
	writeFiles(t, ws.Root(), map[string]string{"bad.json": "{", "bad.yaml": "a: [", "bad.ini": "[unclosed\n"})
	_, err := call(t, JSONRead(ws), StructuredReadArgs{Path: "bad.json"})
	require.ErrorContains(t, err, "not valid JSON")
	_, err = call(t, YAMLRead(ws), StructuredReadArgs{Path: "bad.yaml"})
	require.ErrorContains(t, err, "not valid YAML")
	_, err = call(t, INIRead(ws), INIReadArgs{Path: "bad.ini"})
	require.ErrorContains(t, err, "not valid INI")
}

func TestJSONWriteSetsAKeyOrTheWholeDocument(t *testing.T) {
	ws := newTestWorkspace(t)
	_, err := call(t, JSONWrite(ws), StructuredWriteArgs{Path: "c.json", Key: "db.port", Value: json.RawMessage(`5432`)})
	require.NoError(t, err)
	_, err = call(t, JSONWrite(ws), StructuredWriteArgs{Path: "c.json", Key: "db.host", Value: json.RawMessage(`"localhost"`)})
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(ws.Root(), "c.json"))
	require.NoError(t, err)
	require.JSONEq(t, `{"db": {"port": 5432, "host": "localhost"}}`, string(b))
	_, err = call(t, JSONWrite(ws), StructuredWriteArgs{Path: "c.json", Value: json.RawMessage(`[1, 2.5]`)})
	require.NoError(t, err)
	b, _ = os.ReadFile(filepath.Join(ws.Root(), "c.json"))
	require.JSONEq(t, `[1, 2.5]`, string(b))
	_, err = call(t, JSONWrite(ws), StructuredWriteArgs{Path: "c.json", Key: "0.x", Value: json.RawMessage(`1`)})
	var ke *KeyPathError
	require.ErrorAs(t, err, &ke, "a number is not an object")
	_, err = JSONWrite(ws).Call(t.Context(), json.RawMessage(`{"path": "c.json", "value": {bad}`))
	var ae *tools.ArgumentError
	require.ErrorAs(t, err, &ae)
}

func TestYAMLWriteKeepsNumbersAsNumbers(t *testing.T) {
	ws := newTestWorkspace(t)
	writeFiles(t, ws.Root(), map[string]string{"c.yaml": "name: app\nreplicas: 1\n"})
	_, err := call(t, YAMLWrite(ws), StructuredWriteArgs{Path: "c.yaml", Key: "replicas", Value: json.RawMessage(`3`)})
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(ws.Root(), "c.yaml"))
	require.NoError(t, err)
	require.Equal(t, "name: app\nreplicas: 3\n", string(b))
}

func TestINIReadAndWriteKeepTheRestOfTheFile(t *testing.T) {
	ws := newTestWorkspace(t)
	writeFiles(t, ws.Root(), map[string]string{"a.ini": "; settings\ntop = 1\n\n[server]\n; the port\nport = 8080\nhost = example.org\n"})
	out, err := call(t, INIRead(ws), INIReadArgs{Path: "a.ini", Section: "server", Key: "port"})
	require.NoError(t, err)
	require.Equal(t, "8080", out)
	out, err = call(t, INIRead(ws), INIReadArgs{Path: "a.ini"})
	require.NoError(t, err)
	require.JSONEq(t, `{"DEFAULT": {"top": "1"}, "server": {"port": "8080", "host": "example.org"}}`, out)
	_, err = call(t, INIWrite(ws), INIWriteArgs{Path: "a.ini", Section: "server", Key: "port", Value: "9090"})
	require.NoError(t, err)
	_, err = call(t, INIWrite(ws), INIWriteArgs{Path: "a.ini", Section: "server", Key: "host", Delete: true})
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(ws.Root(), "a.ini"))
	require.NoError(t, err)
	require.Contains(t, string(b), "; the port")
	require.Contains(t, string(b), "port = 9090")
	require.NotContains(t, string(b), "host")
	_, err = call(t, INIWrite(ws), INIWriteArgs{Path: "a.ini", Section: "server", Key: "host", Delete: true})
	require.Error(t, err, "deleting a missing key")
	_, err = call(t, INIRead(ws), INIReadArgs{Path: "a.ini", Section: "nope"})
	require.Error(t, err)
}

func TestStructuredToolsStayInTheWorkspace(t *testing.T) {
	ws := newTestWorkspace(t)
	outside := t.TempDir()
	writeFiles(t, outside, map[string]string{"s.json": `{"k": 1}`})
	require.NoError(t, os.Symlink(outside, filepath.Join(ws.Root(), "out")))
	for _, c := range []struct {
		tool tools.Tool
		args any
	}{
		{JSONRead(ws), StructuredReadArgs{Path: "out/s.json"}},
		{JSONWrite(ws), StructuredWriteArgs{Path: "out/s.json", Value: json.RawMessage(`1`)}},
		{YAMLRead(ws), StructuredReadArgs{Path: "../x.yaml"}},
		{INIWrite(ws), INIWriteArgs{Path: "out/x.ini", Key: "k", Value: "v"}},
	} {
		_, err := call(t, c.tool, c.args)
		var oe *tools.OutsideWorkspaceError
		require.ErrorAs(t, err, &oe)
	}
	b, _ := os.ReadFile(filepath.Join(outside, "s.json"))
	require.Equal(t, `{"k": 1}`, string(b))
}

func TestToolNamesDoNotClashWithTheCodingTools(t *testing.T) {
	ws := newTestWorkspace(t)
	var names []string
	for _, tl := range Tools(ws) {
		names = append(names, tl.Name())
	}
	require.Equal(t, []string{"ini_read", "ini_write", "json_read", "json_write", "yaml_read", "yaml_write"}, names)
	_, err := tools.NewSet(append(append(tools.Coding(ws), tools.FileOps(ws)...), Tools(ws)...)...)
	require.NoError(t, err)
}

func TestStructuredToolsRefuseVCSMetadataWrites(t *testing.T) {
	ws := newTestWorkspace(t)
	writeFiles(t, ws.Root(), map[string]string{".git/config": "[core]\n"})
	_, err := call(t, INIWrite(ws), INIWriteArgs{Path: ".git/config", Section: "core", Key: "hooksPath", Value: "/tmp/x"})
	var pe *tools.ProtectedPathError
	require.ErrorAs(t, err, &pe)
	out, err := call(t, INIRead(ws), INIReadArgs{Path: ".git/config"})
	require.NoError(t, err, "reading metadata is allowed")
	require.Contains(t, out, "core")
}

func TestINIWriteKeepsOtherValuesByteForByte(t *testing.T) {
	ws := newTestWorkspace(t)
	const rest = "; comment\n[s]\npassword = a;b#c\nurl      = http://h/p?q=1#frag\nquoted   = \"x\"\npath     = C:\\dir\\\nnext     = n\n"
	writeFiles(t, ws.Root(), map[string]string{"c.ini": rest})
	_, err := call(t, INIWrite(ws), INIWriteArgs{Path: "c.ini", Section: "s", Key: "k", Value: "w"})
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(ws.Root(), "c.ini"))
	require.NoError(t, err)
	require.Contains(t, string(b), "password = a;b#c\n")
	require.Contains(t, string(b), "url      = http://h/p?q=1#frag\n")
	require.Contains(t, string(b), "quoted   = \"x\"\n")
	require.Contains(t, string(b), "path     = C:\\dir\\\n")
	require.Contains(t, string(b), "next     = n\n")
	for key, want := range map[string]string{"password": "a;b#c", "url": "http://h/p?q=1#frag", "quoted": `"x"`, "path": `C:\dir\`, "next": "n", "k": "w"} {
		got, err := call(t, INIRead(ws), INIReadArgs{Path: "c.ini", Section: "s", Key: key})
		require.NoError(t, err)
		require.Equal(t, want, got, key)
	}
}

func TestINIWriteThenReadReturnsTheSameValue(t *testing.T) {
	for _, value := range []string{
		"a;b#c", "; starts like a comment", "# hash first", "x # not a comment", `"double"`, "'single'",
		"back`tick", "two\nlines", `ends with \`, "=", "a = b", "[not a section]", "",
	} {
		t.Run(value, func(t *testing.T) {
			ws := newTestWorkspace(t)
			writeFiles(t, ws.Root(), map[string]string{"v.ini": "[s]\nother = 1\n"})
			_, err := call(t, INIWrite(ws), INIWriteArgs{Path: "v.ini", Section: "s", Key: "k", Value: value})
			require.NoError(t, err)
			got, err := call(t, INIRead(ws), INIReadArgs{Path: "v.ini", Section: "s", Key: "k"})
			require.NoError(t, err)
			require.Equal(t, value, got)
			other, err := call(t, INIRead(ws), INIReadArgs{Path: "v.ini", Section: "s", Key: "other"})
			require.NoError(t, err)
			require.Equal(t, "1", other)
		})
	}
}

func TestINIWriteRefusesWhatINICannotHold(t *testing.T) {
	const before = "[s]\nother = 1\n"
	for name, args := range map[string]INIWriteArgs{
		"line break in key":      {Key: "a\n[evil]\nrole", Value: "root"},
		"key starting a comment": {Key: "; k", Value: "v"},
		"surrounding spaces":     {Key: "k", Value: "  padded  "},
		"quote breakout":         {Key: "k", Value: "x\"\"\"\n[evil]\nrole = root\n\"\"\""},
	} {
		t.Run(name, func(t *testing.T) {
			ws := newTestWorkspace(t)
			writeFiles(t, ws.Root(), map[string]string{"v.ini": before})
			args.Path, args.Section = "v.ini", "s"
			_, err := call(t, INIWrite(ws), args)
			require.Error(t, err)
			b, err := os.ReadFile(filepath.Join(ws.Root(), "v.ini"))
			require.NoError(t, err)
			require.Equal(t, before, string(b), "the file must not change")
		})
	}
}

func TestJSONWriteKeepsNumbersKeyOrderAndText(t *testing.T) {
	ws := newTestWorkspace(t)
	writeFiles(t, ws.Root(), map[string]string{"p.json": `{"name": "app", "id": 12345678901234567890, "ratio": 1.0,` +
		` "huge": 1e400, "exact": 0.1000000000000000055511151231257827, "script": "a < b && c > d", "deps": {"z": 1, "a": 2}}`})
	_, err := call(t, JSONWrite(ws), StructuredWriteArgs{Path: "p.json", Key: "deps.m", Value: json.RawMessage(`3.50`)})
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(ws.Root(), "p.json"))
	require.NoError(t, err)
	require.Equal(t, `{
  "name": "app",
  "id": 12345678901234567890,
  "ratio": 1.0,
  "huge": 1e400,
  "exact": 0.1000000000000000055511151231257827,
  "script": "a < b && c > d",
  "deps": {
    "z": 1,
    "a": 2,
    "m": 3.50
  }
}
`, string(b))
}

func TestJSONReadRejectsDataAfterTheDocument(t *testing.T) {
	ws := newTestWorkspace(t)
	writeFiles(t, ws.Root(), map[string]string{"t.json": `{"a": 1} {"b": 2}`})
	_, err := call(t, JSONRead(ws), StructuredReadArgs{Path: "t.json"})
	require.ErrorContains(t, err, "not valid JSON: data after the document")
	_, err = call(t, JSONWrite(ws), StructuredWriteArgs{Path: "t.json", Key: "a", Value: json.RawMessage(`5`)})
	require.ErrorContains(t, err, "not valid JSON: data after the document")
}

func TestYAMLToolsRefuseSeveralDocuments(t *testing.T) {
	ws := newTestWorkspace(t)
	const multi = "kind: Service\n---\nkind: Deployment\n"
	writeFiles(t, ws.Root(), map[string]string{"k.yaml": multi})
	_, err := call(t, YAMLRead(ws), StructuredReadArgs{Path: "k.yaml"})
	require.ErrorContains(t, err, "several YAML documents")
	_, err = call(t, YAMLWrite(ws), StructuredWriteArgs{Path: "k.yaml", Key: "kind", Value: json.RawMessage(`"Pod"`)})
	require.ErrorContains(t, err, "several YAML documents")
	b, err := os.ReadFile(filepath.Join(ws.Root(), "k.yaml"))
	require.NoError(t, err)
	require.Equal(t, multi, string(b), "the other documents are not dropped")
}

func TestYAMLWriteKeepsTheRestOfTheDocument(t *testing.T) {
	ws := newTestWorkspace(t)
	writeFiles(t, ws.Root(), map[string]string{"c.yaml": `# deployment settings
base: &base
  retries: 3 # per call
created: 2002-12-14
logo: !!binary aGVsbG8=
mask: 0x1F
prod:
  <<: *base
  hosts:
    - a.example.org
`})
	_, err := call(t, YAMLWrite(ws), StructuredWriteArgs{Path: "c.yaml", Key: "prod.retries", Value: json.RawMessage(`5`)})
	require.NoError(t, err)
	_, err = call(t, YAMLWrite(ws), StructuredWriteArgs{Path: "c.yaml", Key: "prod.hosts.0", Value: json.RawMessage(`"b.example.org"`)})
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(ws.Root(), "c.yaml"))
	require.NoError(t, err)
	require.Equal(t, `# deployment settings
base: &base
  retries: 3 # per call
created: 2002-12-14
logo: !!binary aGVsbG8=
mask: 0x1F
prod:
  <<: *base
  hosts:
    - b.example.org
  retries: 5
`, string(b))
	out, err := call(t, YAMLRead(ws), StructuredReadArgs{Path: "c.yaml", Key: "base.retries"})
	require.NoError(t, err)
	require.Equal(t, "3", out, "the anchored value is not changed")
}

func TestYAMLWriteRefusesAPathThroughAnAlias(t *testing.T) {
	ws := newTestWorkspace(t)
	writeFiles(t, ws.Root(), map[string]string{"c.yaml": "base: &b {retries: 3}\nprod: *b\n"})
	_, err := call(t, YAMLWrite(ws), StructuredWriteArgs{Path: "c.yaml", Key: "prod.retries", Value: json.RawMessage(`5`)})
	require.ErrorContains(t, err, `the value at "prod" is an alias (*b)`)
}

func TestStructuredReadRefusesHostileDocuments(t *testing.T) {
	ws := newTestWorkspace(t)
	bomb := "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
	for i, c := range "bcdefghi" {
		prev := string("abcdefghi"[i])
		bomb += string(c) + ": &" + string(c) + " [" + strings.Repeat("*"+prev+", ", 8) + "*" + prev + "]\n"
	}
	writeFiles(t, ws.Root(), map[string]string{
		"bomb.yaml": bomb,
		"deep.json": strings.Repeat("[", 20000) + strings.Repeat("]", 20000),
		"deep.yaml": strings.Repeat("[", 20000) + strings.Repeat("]", 20000),
	})
	for _, c := range []struct {
		tool tools.Tool
		path string
		want string
	}{
		{YAMLRead(ws), "bomb.yaml", "excessive aliasing"},
		{JSONRead(ws), "deep.json", "exceeded max depth of 10000"},
		{YAMLRead(ws), "deep.yaml", "exceeded max depth of 10000"},
	} {
		_, err := call(t, c.tool, StructuredReadArgs{Path: c.path})
		require.ErrorContains(t, err, c.want, c.path)
	}
}

func TestStructuredReadRefusesValuesOverTheLimit(t *testing.T) {
	ws := newTestWorkspace(t)
	// 18 KB of file, over 160 MB once indented.
	writeFiles(t, ws.Root(), map[string]string{"d.json": `{"small": 1, "deep": ` + strings.Repeat("[", 9000) + strings.Repeat("]", 9000) + `}`})
	_, err := call(t, JSONRead(ws), StructuredReadArgs{Path: "d.json"})
	require.ErrorContains(t, err, "over the 200 KB limit; select a part of it with key")
	out, err := call(t, JSONRead(ws), StructuredReadArgs{Path: "d.json", Key: "small"})
	require.NoError(t, err)
	require.Equal(t, "1", out)
}

func TestYAMLReadGivesInfinitiesAndNaNAsStrings(t *testing.T) {
	ws := newTestWorkspace(t)
	writeFiles(t, ws.Root(), map[string]string{"f.yaml": "up: .inf\ndown: -.inf\nnone: .nan\n"})
	out, err := call(t, YAMLRead(ws), StructuredReadArgs{Path: "f.yaml"})
	require.NoError(t, err)
	require.JSONEq(t, `{"up": ".inf", "down": "-.inf", "none": ".nan"}`, out)
}

func TestKeyPathErrorOfAWriteHasTheWholeKey(t *testing.T) {
	ws := newTestWorkspace(t)
	writeFiles(t, ws.Root(), map[string]string{"c.json": `{"servers": [1, 2]}`, "c.yaml": "servers: [1, 2]\n"})
	for _, c := range []struct {
		tool tools.Tool
		path string
	}{{JSONWrite(ws), "c.json"}, {YAMLWrite(ws), "c.yaml"}} {
		_, err := call(t, c.tool, StructuredWriteArgs{Path: c.path, Key: "servers.5", Value: json.RawMessage(`3`)})
		var ke *KeyPathError
		require.ErrorAs(t, err, &ke, c.path)
		require.Equal(t, KeyPathError{Key: "servers.5", At: "5"}, *ke, c.path)
	}
}
