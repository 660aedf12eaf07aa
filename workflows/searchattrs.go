package workflows

import (
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"

	"github.com/gleaner-hpc/gleaner"
)

// Typed search attributes shared by Gleaner's workflows, by the names the
// root package gives them (gleaner.SearchAttrCampaign, …). Every one must
// be registered with the namespace before a workflow sets it (see
// SearchAttributes and DevServerFlags); the Temporal UI and
// `temporal workflow list --query` then filter on them, e.g.
// `GleanerKind = "trial" AND GleanerCampaign = "mnist"`.
var (
	// GleanerCampaign is the campaign's name, on the campaign and its trials.
	GleanerCampaign = temporal.NewSearchAttributeKeyKeyword(gleaner.SearchAttrCampaign)
	// GleanerKind is "campaign", "trial" or "pool".
	GleanerKind = temporal.NewSearchAttributeKeyKeyword(gleaner.SearchAttrKind)
	// GleanerStatus is the workflow's state: a CampaignPhase on campaigns,
	// a TrialState on trials.
	GleanerStatus = temporal.NewSearchAttributeKeyKeyword(gleaner.SearchAttrStatus)
	// GleanerBestScore is the campaign's best objective value so far.
	GleanerBestScore = temporal.NewSearchAttributeKeyFloat64(gleaner.SearchAttrBestScore)
	// GleanerHypervolume is the Pareto front's hypervolume of a campaign
	// of several objectives or with constraints (instead of
	// GleanerBestScore).
	GleanerHypervolume = temporal.NewSearchAttributeKeyFloat64(gleaner.SearchAttrHypervolume)
	// GleanerTrialsDone counts the campaign's trials that have ended
	// (completed, stopped or failed).
	GleanerTrialsDone = temporal.NewSearchAttributeKeyInt64(gleaner.SearchAttrTrialsDone)
	// GleanerTrialsRunning counts the campaign's trials in flight.
	GleanerTrialsRunning = temporal.NewSearchAttributeKeyInt64(gleaner.SearchAttrTrialsRunning)
	// GleanerTrial is a trial's id within its campaign, e.g. "t00042".
	GleanerTrial = temporal.NewSearchAttributeKeyKeyword(gleaner.SearchAttrTrial)
	// GleanerPool is the pool a trial runs in, or a pool's own name.
	GleanerPool = temporal.NewSearchAttributeKeyKeyword(gleaner.SearchAttrPool)
)

// SearchAttributes lists every key above, with its name and type
// (GetName, GetValueType), for registering them with a namespace.
var SearchAttributes = []temporal.SearchAttributeKey{
	GleanerCampaign, GleanerKind, GleanerStatus, GleanerBestScore, GleanerHypervolume,
	GleanerTrialsDone, GleanerTrialsRunning, GleanerTrial, GleanerPool,
}

// SearchAttributeTypeName is a value type as the temporal CLI spells it
// ("Keyword", "Double", "Int", …).
func SearchAttributeTypeName(t enumspb.IndexedValueType) string {
	switch t {
	case enumspb.INDEXED_VALUE_TYPE_TEXT:
		return "Text"
	case enumspb.INDEXED_VALUE_TYPE_KEYWORD:
		return "Keyword"
	case enumspb.INDEXED_VALUE_TYPE_INT:
		return "Int"
	case enumspb.INDEXED_VALUE_TYPE_DOUBLE:
		return "Double"
	case enumspb.INDEXED_VALUE_TYPE_BOOL:
		return "Bool"
	case enumspb.INDEXED_VALUE_TYPE_DATETIME:
		return "Datetime"
	case enumspb.INDEXED_VALUE_TYPE_KEYWORD_LIST:
		return "KeywordList"
	default:
		panic(fmt.Sprintf("workflows: search attribute type %v has no CLI name", t))
	}
}

// DevServerFlags are the arguments that register SearchAttributes with
// `temporal server start-dev`: --search-attribute GleanerCampaign=Keyword …
func DevServerFlags() []string {
	var args []string
	for _, k := range SearchAttributes {
		args = append(args, "--search-attribute", k.GetName()+"="+SearchAttributeTypeName(k.GetValueType()))
	}
	return args
}
