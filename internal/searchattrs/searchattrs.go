// Package searchattrs checks and registers a namespace's custom search
// attributes through Temporal's operator service: the one implementation
// behind `starter setup`, the dev stack and the worker's start-up check.
//
// It talks to the operator service only; it never starts workflows.
package searchattrs

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"

	"github.com/memagent/memagent/api"
)

// MissingError lists the attributes a namespace lacks.
type MissingError struct {
	Namespace string
	Names     []string
	// Cause is why they could not be added, when adding was tried.
	Cause error
}

func (e *MissingError) Error() string {
	msg := fmt.Sprintf("namespace %s lacks memagent's search attributes %s", e.Namespace, strings.Join(e.Names, ", "))
	if e.Cause != nil {
		msg += fmt.Sprintf(" and they could not be added (%v)", e.Cause)
	}
	return msg
}

func (e *MissingError) Unwrap() error { return e.Cause }

// Ensure checks that namespace has attrs (name → type). With add, it adds
// the missing ones and returns their names; without, or when the server
// refuses, it returns a *MissingError. An attribute of the same name and
// another type, or a system attribute's name, is an error either way.
func Ensure(ctx context.Context, op operatorservice.OperatorServiceClient, namespace string, attrs map[string]enumspb.IndexedValueType, add bool) ([]string, error) {
	list, err := op.ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return nil, fmt.Errorf("list search attributes of namespace %s: %w", namespace, err)
	}
	missing := map[string]enumspb.IndexedValueType{}
	for _, name := range slices.Sorted(maps.Keys(attrs)) {
		want := attrs[name]
		if _, ok := list.GetSystemAttributes()[name]; ok {
			return nil, fmt.Errorf("search attribute %s is a system attribute of this server: memagent cannot use it", name)
		}
		if got, ok := list.GetCustomAttributes()[name]; ok {
			if got != want {
				return nil, fmt.Errorf("search attribute %s exists in namespace %s as %s, memagent needs %s: remove it (temporal operator search-attribute remove --name %s) if nothing else uses it, or run memagent in another namespace",
					name, namespace, got, want, name)
			}
			continue
		}
		missing[name] = want
	}
	names := slices.Sorted(maps.Keys(missing))
	if len(missing) == 0 {
		return nil, nil
	}
	if !add {
		return nil, &MissingError{Namespace: namespace, Names: names}
	}
	_, err = op.AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{Namespace: namespace, SearchAttributes: missing})
	var exists *serviceerror.AlreadyExists
	var invalid *serviceerror.InvalidArgument
	switch {
	case err == nil, errors.As(err, &exists):
		// Added, or by someone else in between.
		return names, nil
	case errors.As(err, &invalid):
		return nil, &MissingError{Namespace: namespace, Names: names, Cause: fmt.Errorf("%w (SQL visibility allows 3 Int, 10 Keyword and 3 Text custom attributes per namespace; memagent needs 3 Int and 6 Keyword: see `temporal operator search-attribute list`)", err)}
	}
	return nil, &MissingError{Namespace: namespace, Names: names, Cause: err}
}

// Memagent returns every custom search attribute memagent's workflows set,
// by name, with its type: the one list that `starter setup`, the worker's
// start-up check and the dev stack register (workflows.SearchAttributes
// returns it). SQL visibility allows 3 Int, 10 Keyword and 3 Text custom
// attributes per namespace; this list uses 3 Int and 6 Keyword.
func Memagent() map[string]enumspb.IndexedValueType {
	return map[string]enumspb.IndexedValueType{
		api.AttrDocument:       enumspb.INDEXED_VALUE_TYPE_KEYWORD,
		api.AttrModel:          enumspb.INDEXED_VALUE_TYPE_KEYWORD,
		api.AttrQuestionDigest: enumspb.INDEXED_VALUE_TYPE_KEYWORD,
		api.AttrBatch:          enumspb.INDEXED_VALUE_TYPE_KEYWORD,
		api.AttrChunksDone:     enumspb.INDEXED_VALUE_TYPE_INT,
		api.AttrChunksTotal:    enumspb.INDEXED_VALUE_TYPE_INT,
		api.AttrStatus:         enumspb.INDEXED_VALUE_TYPE_KEYWORD,
		api.AttrChangedItems:   enumspb.INDEXED_VALUE_TYPE_INT,
		api.AttrSignoff:        enumspb.INDEXED_VALUE_TYPE_KEYWORD,
	}
}
