// Package uitest holds the tests of what Gleaner's users see outside Go:
//
//   - the Temporal web UI, in headless Chromium: a real campaign on a dev
//     server is found by its search attribute and shows its summary
//     (ui_test.go, driven over the Chrome DevTools protocol by a small
//     client in cdp_test.go; `make ui-test`);
//   - the docker-compose deployment: `docker-compose config -q` accepts
//     docker-compose.yml, its search attributes are exactly
//     workflows.SearchAttributes, and the Dockerfile's Go is go.mod's
//     (compose_test.go; `make compose-check`).
//
// The UI test needs Debian's chromium (or GLEANER_CHROMIUM naming a
// Chrome) and the temporal CLI; the compose test needs docker-compose.
// Each skips without its tool, except with CI=true, where it fails.
// GLEANER_UI_SCREENSHOT=1 also writes the UI test's screenshots to
// docs/ui-campaign.png and docs/ui-campaign-list.png.
package uitest
