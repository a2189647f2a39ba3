// Command celparity is the oracle of the CEL parity test: it evaluates DRA device-selector
// expressions with the real Kubernetes implementation (k8s.io/dynamic-resource-allocation/cel)
// and prints, for every case, what a workload cluster would make of it.
//
// With -decls it prints instead the functions the NewExpressions environment declares, one overload
// a line ("name G|M overload-id (arg, ...) -> result"), for the test that compares them with
// modelplane's table.
//
// Input (stdin, or the file named by the only argument): a JSON list of cases
//
//	{"id": "...", "expression": "...",
//	 "device": {"driver": "gpu.nvidia.com",
//	            "attributes": {"name": {"string"|"int"|"bool"|"version": value}},
//	            "capacity": {"name": "80Gi"}}}
//
// Output (stdout): a JSON list, one entry per case, in input order:
//
//	{"id": "...", "result": "match"|"nomatch"|"compile-error"|"runtime-error",
//	 "detail": "...", "maxCost": n, "actualCost": n}
//
// An expression goes through the two steps it meets on a cluster. First the API server
// validates it when a ResourceClaim is created (length limit, compilation in the
// NewExpressions environment, estimated cost limit): a refusal is a compile-error. Then the
// kube-scheduler compiles it in the StoredExpressions environment and evaluates it against
// the device under the runtime cost limit: a failure is a runtime-error.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apiserver/pkg/cel/environment"
	dracel "k8s.io/dynamic-resource-allocation/cel"
)

type attribute struct {
	String  *string `json:"string,omitempty"`
	Int     *int64  `json:"int,omitempty"`
	Bool    *bool   `json:"bool,omitempty"`
	Version *string `json:"version,omitempty"`
}

type device struct {
	Driver     string               `json:"driver"`
	Attributes map[string]attribute `json:"attributes"`
	Capacity   map[string]string    `json:"capacity"`
}

type testCase struct {
	ID         string `json:"id"`
	Expression string `json:"expression"`
	Device     device `json:"device"`
}

type answer struct {
	ID         string  `json:"id"`
	Result     string  `json:"result"`
	Detail     string  `json:"detail,omitempty"`
	MaxCost    *uint64 `json:"maxCost,omitempty"`
	ActualCost *uint64 `json:"actualCost,omitempty"`
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "celparity:", err)
		os.Exit(1)
	}
}

func run() error {
	if len(os.Args) == 2 && os.Args[1] == "-decls" {
		return printDeclarations()
	}
	var in io.Reader = os.Stdin
	if len(os.Args) == 2 {
		f, err := os.Open(os.Args[1])
		if err != nil {
			return err
		}
		defer f.Close()
		in = f
	} else if len(os.Args) > 2 {
		return fmt.Errorf("usage: celparity [cases.json]")
	}
	var cases []testCase
	if err := json.NewDecoder(in).Decode(&cases); err != nil {
		return fmt.Errorf("reading cases: %w", err)
	}
	answers := make([]answer, 0, len(cases))
	for _, c := range cases {
		a, err := evaluate(c)
		if err != nil {
			return fmt.Errorf("case %s: %w", c.ID, err)
		}
		answers = append(answers, a)
	}
	out := json.NewEncoder(os.Stdout)
	out.SetIndent("", "  ")
	out.SetEscapeHTML(false)
	return out.Encode(answers)
}

func evaluate(c testCase) (answer, error) {
	a := answer{ID: c.ID}
	in, err := convert(c.Device)
	if err != nil {
		return a, err
	}
	compiler := dracel.GetCompiler(dracel.Features{})

	// What the API server does when a ResourceClaim with this selector is created.
	if len(c.Expression) > resourceapi.CELSelectorExpressionMaxLength {
		a.Result, a.Detail = "compile-error", fmt.Sprintf("expression longer than %d bytes", resourceapi.CELSelectorExpressionMaxLength)
		return a, nil
	}
	newExpressions := environment.NewExpressions
	validated := compiler.CompileCELExpression(c.Expression, dracel.Options{EnvType: &newExpressions})
	if validated.Error != nil {
		a.Result, a.Detail = "compile-error", validated.Error.Error()
		return a, nil
	}
	maxCost := validated.MaxCost
	a.MaxCost = &maxCost
	if maxCost > resourceapi.CELSelectorExpressionMaxCost {
		a.Result, a.Detail = "compile-error", "too complex, exceeds cost limit"
		return a, nil
	}

	// What the kube-scheduler does when it allocates a device for the claim.
	stored := compiler.CompileCELExpression(c.Expression, dracel.Options{})
	if stored.Error != nil {
		a.Result, a.Detail = "compile-error", stored.Error.Error()
		return a, nil
	}
	matches, details, err := stored.DeviceMatches(context.Background(), in)
	if details != nil {
		a.ActualCost = details.ActualCost()
	}
	switch {
	case err != nil:
		a.Result, a.Detail = "runtime-error", err.Error()
	case matches:
		a.Result = "match"
	default:
		a.Result = "nomatch"
	}
	return a, nil
}

func convert(d device) (dracel.Device, error) {
	out := dracel.Device{
		Driver:     d.Driver,
		Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{},
		Capacity:   map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{},
	}
	for name, attr := range d.Attributes {
		out.Attributes[resourceapi.QualifiedName(name)] = resourceapi.DeviceAttribute{
			StringValue:  attr.String,
			IntValue:     attr.Int,
			BoolValue:    attr.Bool,
			VersionValue: attr.Version,
		}
	}
	for name, text := range d.Capacity {
		q, err := resource.ParseQuantity(text)
		if err != nil {
			return out, fmt.Errorf("capacity %s: %w", name, err)
		}
		out.Capacity[resourceapi.QualifiedName(name)] = resourceapi.DeviceCapacity{Value: q}
	}
	return out, nil
}

func printDeclarations() error {
	newExpressions := environment.NewExpressions
	result := dracel.GetCompiler(dracel.Features{}).CompileCELExpression("true", dracel.Options{EnvType: &newExpressions})
	if result.Error != nil {
		return result.Error
	}
	functions := result.Environment.Functions()
	names := make([]string, 0, len(functions))
	for name := range functions {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		for _, overload := range functions[name].OverloadDecls() {
			args := make([]string, 0, len(overload.ArgTypes()))
			for _, arg := range overload.ArgTypes() {
				args = append(args, arg.String())
			}
			kind := "G"
			if overload.IsMemberFunction() {
				kind = "M"
			}
			fmt.Printf("%s %s %s (%s) -> %s\n", name, kind, overload.ID(), strings.Join(args, ", "), overload.ResultType().String())
		}
	}
	return nil
}
