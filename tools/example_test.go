package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/agentgraph/agentgraph/tools"
)

func ExampleNew() {
	type shoutArgs struct {
		Text  string `json:"text" jsonschema:"required,description=Text to shout"`
		Times int    `json:"times,omitempty" jsonschema:"description=Repetitions (default 1)"`
	}
	shout := tools.New("shout", "Upper-case a text.",
		func(ctx context.Context, a shoutArgs) (string, error) {
			return strings.Repeat(strings.ToUpper(a.Text), max(a.Times, 1)), nil
		})

	fmt.Println(string(shout.Parameters()))

	out, err := shout.Call(context.Background(), json.RawMessage(`{"text":"hi","times":2}`))
	fmt.Println(out, err)

	_, err = shout.Call(context.Background(), json.RawMessage(`{"txt":"hi"}`))
	var argErr *tools.ArgumentError
	fmt.Println(errors.As(err, &argErr), argErr.Tool)
	// Output:
	// {"properties":{"text":{"type":"string","description":"Text to shout"},"times":{"type":"integer","description":"Repetitions (default 1)"}},"additionalProperties":false,"type":"object","required":["text"]}
	// HIHI <nil>
	// true shout
}

func ExampleWorkspace_Resolve() {
	dir, err := os.MkdirTemp("", "workspace")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	ws, err := tools.NewWorkspace(dir)
	if err != nil {
		fmt.Println(err)
		return
	}

	p, err := ws.Resolve("src/../cmd/main.go") // need not exist yet
	fmt.Println(strings.TrimPrefix(p, ws.Root()), err)

	_, err = ws.Resolve("../etc/passwd")
	var outside *tools.OutsideWorkspaceError
	fmt.Println(errors.As(err, &outside), err)
	// Output:
	// /cmd/main.go <nil>
	// true path "../etc/passwd" is outside the workspace
}
