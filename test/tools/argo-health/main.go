// Command argo-health runs a resource health check (health.lua) the way Argo CD runs one configured
// in argocd-cm (util/lua/lua.go in argoproj/argo-cd): a gopher-lua state without the standard
// libraries, then only package, base and table opened; the object as the global `obj`, a Lua table
// converted value by value from its JSON; one second to run; the returned table's status must be one
// of Argo CD's health codes. Argo CD also opens its own restricted `os` (dates only): this script
// does not use it, so it is not opened here, and a script that calls it fails loudly.
//
// Usage: argo-health <health.lua>  < List JSON (`kubectl get evt -o json`)
// Prints one JSON object: name -> {status, message}.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	lua "github.com/yuin/gopher-lua"
)

type health struct {
	Status  string `json:"status"`
	Message string `json:"message"`
}

var validCodes = map[string]bool{"Unknown": true, "Progressing": true, "Suspended": true, "Healthy": true, "Degraded": true, "Missing": true}

func main() {
	if len(os.Args) != 2 {
		fail(fmt.Errorf("usage: argo-health <health.lua> < list.json"))
	}
	script, err := os.ReadFile(os.Args[1])
	if err != nil {
		fail(err)
	}
	input, err := io.ReadAll(os.Stdin)
	if err != nil {
		fail(err)
	}
	var list struct {
		Items []map[string]interface{} `json:"items"`
	}
	if err := json.Unmarshal(input, &list); err != nil {
		fail(fmt.Errorf("stdin is not a Kubernetes List: %w", err))
	}
	results := map[string]health{}
	for _, item := range list.Items {
		name, _ := item["metadata"].(map[string]interface{})["name"].(string)
		result, err := run(string(script), item)
		if err != nil {
			fail(fmt.Errorf("%s: %w", name, err))
		}
		results[name] = result
	}
	if err := json.NewEncoder(os.Stdout).Encode(results); err != nil {
		fail(err)
	}
}

func run(script string, obj map[string]interface{}) (health, error) {
	l := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer l.Close()
	for name, open := range map[string]lua.LGFunction{lua.LoadLibName: lua.OpenPackage, lua.BaseLibName: lua.OpenBase, lua.TabLibName: lua.OpenTable} {
		if err := l.CallByParam(lua.P{Fn: l.NewFunction(open), NRet: 0, Protect: true}, lua.LString(name)); err != nil {
			return health{}, err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	l.SetContext(ctx)
	l.SetGlobal("obj", toLua(l, obj))
	if err := l.DoString(script); err != nil {
		return health{}, err
	}
	table, ok := l.Get(-1).(*lua.LTable)
	if !ok {
		return health{}, fmt.Errorf("expected a table from the script, got %s", l.Get(-1).Type())
	}
	result := health{Status: lua.LVAsString(table.RawGetString("status")), Message: lua.LVAsString(table.RawGetString("message"))}
	if !validCodes[result.Status] {
		return health{Status: "Unknown", Message: "Lua returned an invalid health status"}, nil
	}
	return result, nil
}

// toLua converts a decoded JSON value as Argo CD does: objects and arrays become tables, numbers
// LNumber, null nil.
func toLua(l *lua.LState, value interface{}) lua.LValue {
	switch v := value.(type) {
	case bool:
		return lua.LBool(v)
	case float64:
		return lua.LNumber(v)
	case string:
		return lua.LString(v)
	case []interface{}:
		table := l.CreateTable(len(v), 0)
		for _, item := range v {
			table.Append(toLua(l, item))
		}
		return table
	case map[string]interface{}:
		table := l.CreateTable(0, len(v))
		for key, item := range v {
			table.RawSetH(lua.LString(key), toLua(l, item))
		}
		return table
	}
	return lua.LNil
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "argo-health:", err)
	os.Exit(1)
}
