package workflows

// HTTPIDsChange gates the form of a batch's children's workflow ids (gate:
// see VERSIONS.md, http-ids): at version 1, <batch id>.<seq> and
// <batch id>.<seq>.s<k> (api.BatchItemWorkflowID), which Temporal's HTTP
// API can put in a URL path; before, <batch id>/<seq>, which it cannot. A
// batch's first run decides and records it in its state
// (batchState.HTTPIDs), so that a batch keeps one form through every run:
// the children a run carries and the ones it starts after an upgrade have
// ids of the same form.
const HTTPIDsChange = "http-ids"
