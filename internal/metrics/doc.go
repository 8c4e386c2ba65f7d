// Package metrics owns the gateway's Prometheus metrics (docs/PROTOCOL.md section 7): every
// series is named gateway_*, and callers record through small typed methods so no label
// string is spelled outside this package.
//
// A [Metrics] owns its own registry rather than the global default one, so tests (and
// several gateways in one process) each get an independent set of counters. A nil
// *Metrics is valid and records nothing, so a caller that does not care about metrics
// passes nil instead of building a registry.
//
// # Labels
//
// route, code and reason are chosen by the gateway's own code (a handful of constants),
// so they are used as given, except that "" becomes "none" (and invalid UTF-8, a bug, is
// repaired rather than left to panic).
//
// model and client_type come from the client, and error_code from Bedrock; left alone,
// one client looping over random model names would create series without bound and
// exhaust the scraper. Each of these labels therefore goes through a guard that:
//
//   - maps "" to "none";
//   - repairs invalid UTF-8 (the Prometheus client panics on it);
//   - truncates to a byte limit at a rune boundary ([MaxModelLen], [MaxClientTypeLen],
//     [MaxErrorCodeLen]);
//   - admits the first N distinct values for the life of the process ([MaxModels],
//     [MaxClientTypes], [MaxErrorCodes]) and reports every later newcomer as "other".
//     A model or client type is admitted only once a request with it succeeded (a model
//     also when configured: [Metrics.Configure]); until then it is "other", so
//     failed requests naming random values cannot use up the cap.
//
// A value that a client sends literally as "none" or "other" is counted in that bucket
// and does not use up a slot. Admission is first come, first served and never forgets:
// the caps bound memory and series, they do not pick the "important" values, so a
// dashboard showing a large "other" means a cap is too low or a client is misbehaving.
//
// The guard is read-mostly: a value already admitted costs one lock-free map load, and
// only a newcomer before the cap is reached takes a mutex.
package metrics
