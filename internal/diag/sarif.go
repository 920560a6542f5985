package diag

import (
	"encoding/json"
	"io"
	"net/url"
	"strings"
)

// The SARIF 2.1.0 schema a log names; package sariftest holds a copy the tests
// validate against.
const sarifSchemaURI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"

// The parts of SARIF 2.1.0 (OASIS standard, section 3) the log uses.
type (
	sarifLog struct {
		Schema  string     `json:"$schema"`
		Version string     `json:"version"`
		Runs    []sarifRun `json:"runs"`
	}
	sarifRun struct {
		Tool    sarifTool     `json:"tool"`
		Results []sarifResult `json:"results"` // [] when the run found nothing
	}
	sarifTool struct {
		Driver sarifDriver `json:"driver"`
	}
	sarifDriver struct {
		Name           string      `json:"name"`
		Version        string      `json:"version,omitempty"`
		InformationURI string      `json:"informationUri,omitempty"`
		Rules          []sarifRule `json:"rules"`
	}
	sarifRule struct {
		ID               string       `json:"id"`
		ShortDescription sarifMessage `json:"shortDescription"`
	}
	sarifMessage struct {
		Text string `json:"text"`
	}
	sarifResult struct {
		RuleID    string          `json:"ruleId"`
		RuleIndex int             `json:"ruleIndex"`
		Level     string          `json:"level"`
		Message   sarifMessage    `json:"message"`
		Locations []sarifLocation `json:"locations,omitempty"`
	}
	sarifLocation struct {
		PhysicalLocation sarifPhysical `json:"physicalLocation"`
	}
	sarifPhysical struct {
		ArtifactLocation sarifArtifact `json:"artifactLocation"`
		Region           *sarifRegion  `json:"region,omitempty"`
	}
	sarifArtifact struct {
		URI       string `json:"uri"`
		URIBaseID string `json:"uriBaseId,omitempty"`
	}
	sarifRegion struct {
		StartLine   int `json:"startLine"`
		StartColumn int `json:"startColumn,omitempty"`
	}
)

// writeSARIF writes one SARIF log with one run: tool's rules, and one result
// a diagnostic. A file is named relative to %SRCROOT%, the checkout's root,
// as code scanning resolves it.
func writeSARIF(w io.Writer, tool Tool, ds []Diagnostic) error {
	run := sarifRun{
		Tool: sarifTool{Driver: sarifDriver{
			Name:           tool.Name,
			Version:        tool.Version,
			InformationURI: tool.InformationURI,
			Rules:          make([]sarifRule, len(tool.Rules)),
		}},
		Results: make([]sarifResult, 0, len(ds)),
	}
	index := make(map[string]int, len(tool.Rules))
	for i, r := range tool.Rules {
		run.Tool.Driver.Rules[i] = sarifRule{ID: r.ID, ShortDescription: sarifMessage{r.Description}}
		index[r.ID] = i
	}
	for _, d := range ds {
		text := d.Message
		if d.Title != "" {
			text = d.Title + ": " + d.Message
		}
		res := sarifResult{RuleID: d.Rule, RuleIndex: index[d.Rule], Level: sarifLevel(d.Severity), Message: sarifMessage{text}}
		if d.File != "" {
			art := sarifArtifact{URI: fileURI(d.File)}
			if !strings.HasPrefix(d.File, "/") {
				art.URIBaseID = "%SRCROOT%"
			}
			loc := sarifLocation{PhysicalLocation: sarifPhysical{ArtifactLocation: art}}
			if d.Line > 0 {
				loc.PhysicalLocation.Region = &sarifRegion{StartLine: d.Line, StartColumn: d.Col}
			}
			res.Locations = []sarifLocation{loc}
		}
		run.Results = append(run.Results, res)
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(sarifLog{Schema: sarifSchemaURI, Version: "2.1.0", Runs: []sarifRun{run}})
}

func sarifLevel(s Severity) string {
	switch s {
	case Warning:
		return "warning"
	case Note:
		return "note"
	}
	return "error"
}

// fileURI is a relative URI reference to a slash-separated file name: each
// segment percent-encoded, so a space or a '#' stays part of the name, and a
// first segment with a ':' prefixed with "./" so it does not read as a scheme.
func fileURI(name string) string {
	segs := strings.Split(name, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	u := strings.Join(segs, "/")
	if first, _, _ := strings.Cut(u, "/"); strings.Contains(first, ":") && !strings.HasPrefix(name, "/") {
		u = "./" + u
	}
	if strings.HasPrefix(name, "/") {
		u = "file://" + u
	}
	return u
}
