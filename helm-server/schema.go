package main

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"helm.sh/helm/v4/pkg/chart/common/util"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
)

// valuesSchemas is helm's values.schema.json check with each schema compiled once: helm compiles the
// schema again for every release (13 % of this process's CPU at 100 tenants, most of it compiling the
// patterns' regular expressions). The check is helm's otherwise: the same library, the values it
// checks (the chart's coalesced with the release's, each dependency's under its name) and the same
// message, so the operator maps a refusal to the same reason. Releases then run with helm's own check
// off (SkipSchemaValidation).
type valuesSchemas struct {
	mu       sync.Mutex
	compiled map[[sha256.Size]byte]*jsonschema.Schema
}

func newValuesSchemas() *valuesSchemas {
	return &valuesSchemas{compiled: map[[sha256.Size]byte]*jsonschema.Schema{}}
}

// check validates the release's values as helm's install and upgrade do before rendering: after the
// chart's dependencies are processed (conditions, tags, imported values; helm repeats it, unchanged).
func (s *valuesSchemas) check(chart *chartv2.Chart, vals map[string]any) error {
	if err := chartutil.ProcessDependencies(chart, vals); err != nil {
		return fmt.Errorf("chart dependencies processing failed: %w", err)
	}
	coalesced, err := util.CoalesceValues(chart, vals)
	if err != nil {
		return err
	}
	if err := s.validate(chart, coalesced); err != nil {
		return fmt.Errorf("values don't meet the specifications of the schema(s) in the following chart(s):\n%w", err)
	}
	return nil
}

// validate is helm's ValidateAgainstSchema (pkg/chart/common/util): the chart, then each dependency
// given values, every refusal under its chart's name.
func (s *valuesSchemas) validate(chart *chartv2.Chart, values map[string]any) error {
	var report strings.Builder
	if chart.Schema != nil {
		if err := s.validateOne(chart.Schema, values); err != nil {
			fmt.Fprintf(&report, "%s:\n%s", chart.Name(), err.Error())
		}
	}
	for _, dependency := range chart.Dependencies() {
		raw, given := values[dependency.Name()]
		if !given || raw == nil {
			continue
		}
		dependencyValues, ok := raw.(map[string]any)
		if !ok {
			fmt.Fprintf(&report, "%s:\ninvalid type for values: expected object (map), got %T\n", dependency.Name(), raw)
			continue
		}
		if err := s.validate(dependency, dependencyValues); err != nil {
			report.WriteString(err.Error())
		}
	}
	if report.Len() > 0 {
		return errors.New(report.String())
	}
	return nil
}

func (s *valuesSchemas) validateOne(schemaJSON []byte, values map[string]any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("unable to validate schema: %s", r)
		}
	}()
	schema, err := s.compile(schemaJSON)
	if err != nil {
		return err
	}
	if err := schema.Validate(values); err != nil {
		// helm's JSONSchemaValidationError text: the library's report without its first line.
		return errors.New(strings.TrimPrefix(err.Error(), "jsonschema validation failed with 'file:///values.schema.json#'\n") + "\n")
	}
	return nil
}

// compile returns the schema compiled from these bytes, compiling it the first time. A schema that
// does not compile is not kept: each release reports it, as with helm.
func (s *valuesSchemas) compile(schemaJSON []byte) (*jsonschema.Schema, error) {
	key := sha256.Sum256(schemaJSON)
	s.mu.Lock()
	defer s.mu.Unlock()
	if schema, ok := s.compiled[key]; ok {
		return schema, nil
	}
	document, err := jsonschema.UnmarshalJSON(bytes.NewReader(schemaJSON))
	if err != nil {
		return nil, err
	}
	// helm's loaders but the network ones: a bundled chart's schema refers to nothing remote, and this
	// process reaches nothing but the API server and the render guard.
	compiler := jsonschema.NewCompiler()
	compiler.UseLoader(jsonschema.SchemeURLLoader{"file": jsonschema.FileLoader{}})
	if err := compiler.AddResource("file:///values.schema.json", document); err != nil {
		return nil, err
	}
	schema, err := compiler.Compile("file:///values.schema.json")
	if err != nil {
		return nil, err
	}
	s.compiled[key] = schema
	return schema, nil
}
