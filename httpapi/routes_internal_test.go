package httpapi

import (
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestRoutesMatchSpec checks that router.go and openapi.yaml list the same
// methods and paths, and that the spec documents every problem slug.
func TestRoutesMatchSpec(t *testing.T) {
	spec, err := OpenAPIJSON()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(spec, &doc); err != nil {
		t.Fatal(err)
	}
	var inSpec, inRouter []string
	for path, item := range doc.Paths {
		for m := range item {
			if m != "parameters" {
				inSpec = append(inSpec, strings.ToUpper(m)+" "+path)
			}
		}
	}
	for _, rt := range (&server{}).routes() {
		inRouter = append(inRouter, rt.method+" "+rt.path)
	}
	slices.Sort(inSpec)
	slices.Sort(inRouter)
	if !slices.Equal(inSpec, inRouter) {
		t.Fatalf("openapi.yaml has\n  %s\nrouter.go has\n  %s", strings.Join(inSpec, "\n  "), strings.Join(inRouter, "\n  "))
	}

	slugs := []string{slugInvalidBody, slugInvalidQuery, slugTokenMissing, slugTokenInvalid, slugReadOnlyToken,
		slugNotFound, slugDeviceNotFound, slugNotRecorded, slugMethodNotAllowed, slugBodyTooLarge,
		slugUnsupportedType, slugRateLimited, slugInternal, slugNotReady, slugInsufficientDisk, slugStoreFailed,
		slugDeviceMerged, slugMergeRefused, slugHistoryCompacted, slugMCPRequest, slugMCPSession, slugDestinationDisabled}
	for _, s := range slugs {
		if !strings.Contains(string(openapiYAML), "urn:jocasta:problem:"+s+`"`) {
			t.Errorf("openapi.yaml has no response with the problem type %s", s)
		}
	}
	// The Problem schema's description lists every slug.
	desc := regexp.MustCompile("(?s)`urn:jocasta:problem:` and one of (.*?)\\.\n").FindSubmatch(openapiYAML)
	if desc == nil {
		t.Fatal("no slug list in the Problem description")
	}
	listed := strings.Fields(strings.NewReplacer(",", " ", "\n", " ", "            ", " ").Replace(string(desc[1])))
	slices.Sort(listed)
	slices.Sort(slugs)
	if !slices.Equal(listed, slugs) {
		t.Fatalf("Problem description lists %v, want %v", listed, slugs)
	}
}

func TestChangeKindsMatchSpec(t *testing.T) {
	for _, k := range changeKinds {
		if !strings.Contains(string(openapiYAML), "        - "+k+"\n") {
			t.Errorf("openapi.yaml ChangeKind lacks %s", k)
		}
	}
	if got := strings.Count(string(openapiYAML), "        - device.") + strings.Count(string(openapiYAML), "        - source."); got != len(changeKinds) {
		t.Errorf("openapi.yaml lists %d change kinds, the server %d", got, len(changeKinds))
	}
}

func TestMethodOrder(t *testing.T) {
	ms := []string{http.MethodPatch, http.MethodHead, http.MethodGet}
	slices.SortFunc(ms, func(a, b string) int { return methodOrder(a) - methodOrder(b) })
	if strings.Join(ms, ",") != "GET,HEAD,PATCH" {
		t.Fatal(ms)
	}
}
