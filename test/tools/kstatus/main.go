// Command kstatus prints the kstatus verdict (sigs.k8s.io/cli-utils/pkg/kstatus/status, the library
// Flux's health checks and `wait: true` use) of every object in a Kubernetes List read from stdin
// (`kubectl get evt -o json`), as one JSON object: name -> {status, message}.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

type verdict struct {
	Status  string `json:"status"`
	Message string `json:"message"`
}

func main() {
	input, err := io.ReadAll(os.Stdin)
	if err != nil {
		fail(err)
	}
	var list unstructured.UnstructuredList
	if err := list.UnmarshalJSON(input); err != nil {
		fail(fmt.Errorf("stdin is not a Kubernetes List: %w", err))
	}
	verdicts := map[string]verdict{}
	for i := range list.Items {
		result, err := status.Compute(&list.Items[i])
		if err != nil {
			fail(fmt.Errorf("%s: %w", list.Items[i].GetName(), err))
		}
		verdicts[list.Items[i].GetName()] = verdict{Status: result.Status.String(), Message: result.Message}
	}
	if err := json.NewEncoder(os.Stdout).Encode(verdicts); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "kstatus:", err)
	os.Exit(1)
}
