package pricing

import "maps"

// Defaults returns the built-in prices: on-demand, US dollars per million tokens, by
// foundation model id (and global.… profile id where Bedrock prices it apart). A copy:
// the caller may change it.
//
// Sources, and how far each was confirmed:
//
//   - AWS: Amazon Bedrock pricing, https://aws.amazon.com/bedrock/pricing/, on-demand, US
//     East (N. Virginia), as the page stood on 2025-07-20 (a dated copy of its tables: the
//     page draws them with a script, so they could not be read from it here). The models
//     marked "AWS, late 2025" are from a later, undated copy of the same tables, for the
//     same Region. Bedrock prices by the Region the call is made from (cross-Region
//     inference costs what the source Region charges), and other Regions charge more for
//     some models: set prices for them.
//   - Anthropic: Anthropic's published prices, https://platform.claude.com/docs/en/about-claude/pricing,
//     as of 2026-11, for the Claude models the AWS copies do not list (Opus 4.1's cache
//     prices included). Bedrock charges Anthropic's prices on the global cross-Region
//     profile (global.…) of the models from Claude Sonnet 4.5 on, and 10% more in one Region
//     or a geographic profile (us., eu., jp.…): AWS's guide to global cross-Region inference,
//     https://docs.aws.amazon.com/bedrock/latest/userguide/global-cross-region-inference.html,
//     says the global profile saves about 10%, and Anthropic's page of Claude on Bedrock
//     calls it a 10% premium of the regional endpoints. So those models have two rows.
//
// Prompt-cache prices: Claude's as published, a write (5-minute cache) 1.25 times the
// input price and a read 0.1 times; the 1-hour cache's writes (twice the input price) are
// not told apart in the usage Converse returns, so they are priced as 5-minute writes. Nova's reads
// as the AWS page lists them, a quarter of the input price; the page has no price for
// Nova's cache writes, which are priced as input. Models without prompt caching on
// Bedrock have no cache prices.
//
// Left out, so priced at 0 until the configuration gives them a price: the Claude 5.5
// models (Anthropic prices them on Bedrock apart from its own API, and no AWS source for
// them was found), Nova 2 Lite and Llama 3.2 11B and 90B (the sources disagree), Mistral
// Large 24.02 and DeepSeek's models (no source found).
func Defaults() map[string]Price { return maps.Clone(defaults) }

var defaults = map[string]Price{
	// Anthropic; AWS, 2025-07-20.
	"anthropic.claude-opus-4-20250514-v1:0":     {Input: 15, Output: 75, CacheRead: 1.50, CacheWrite: 18.75},
	"anthropic.claude-sonnet-4-20250514-v1:0":   {Input: 3, Output: 15, CacheRead: 0.30, CacheWrite: 3.75},
	"anthropic.claude-3-7-sonnet-20250219-v1:0": {Input: 3, Output: 15, CacheRead: 0.30, CacheWrite: 3.75},
	"anthropic.claude-3-5-sonnet-20241022-v2:0": {Input: 3, Output: 15, CacheRead: 0.30, CacheWrite: 3.75},
	"anthropic.claude-3-5-haiku-20241022-v1:0":  {Input: 0.80, Output: 4, CacheRead: 0.08, CacheWrite: 1},
	"anthropic.claude-3-5-sonnet-20240620-v1:0": {Input: 3, Output: 15},
	"anthropic.claude-3-haiku-20240307-v1:0":    {Input: 0.25, Output: 1.25},
	// Anthropic; AWS, late 2025 (Opus 4.1's cache prices: Anthropic).
	"anthropic.claude-opus-4-1-20250805-v1:0": {Input: 15, Output: 75, CacheRead: 1.50, CacheWrite: 18.75},
	"anthropic.claude-3-opus-20240229-v1:0":   {Input: 15, Output: 75},
	"anthropic.claude-3-sonnet-20240229-v1:0": {Input: 3, Output: 15},
	// Anthropic, from Claude Sonnet 4.5 on: Anthropic's price on the global profile, 10%
	// more in a Region or a geography.
	"global.anthropic.claude-opus-4-7":                 {Input: 5, Output: 25, CacheRead: 0.50, CacheWrite: 6.25},
	"anthropic.claude-opus-4-7":                        {Input: 5.50, Output: 27.50, CacheRead: 0.55, CacheWrite: 6.875},
	"global.anthropic.claude-opus-4-6-v1":              {Input: 5, Output: 25, CacheRead: 0.50, CacheWrite: 6.25},
	"anthropic.claude-opus-4-6-v1":                     {Input: 5.50, Output: 27.50, CacheRead: 0.55, CacheWrite: 6.875},
	"global.anthropic.claude-opus-4-5-20251101-v1:0":   {Input: 5, Output: 25, CacheRead: 0.50, CacheWrite: 6.25},
	"anthropic.claude-opus-4-5-20251101-v1:0":          {Input: 5.50, Output: 27.50, CacheRead: 0.55, CacheWrite: 6.875},
	"global.anthropic.claude-sonnet-4-6":               {Input: 3, Output: 15, CacheRead: 0.30, CacheWrite: 3.75},
	"anthropic.claude-sonnet-4-6":                      {Input: 3.30, Output: 16.50, CacheRead: 0.33, CacheWrite: 4.125},
	"global.anthropic.claude-sonnet-4-5-20250929-v1:0": {Input: 3, Output: 15, CacheRead: 0.30, CacheWrite: 3.75},
	"anthropic.claude-sonnet-4-5-20250929-v1:0":        {Input: 3.30, Output: 16.50, CacheRead: 0.33, CacheWrite: 4.125},
	"global.anthropic.claude-haiku-4-5-20251001-v1:0":  {Input: 1, Output: 5, CacheRead: 0.10, CacheWrite: 1.25},
	"anthropic.claude-haiku-4-5-20251001-v1:0":         {Input: 1.10, Output: 5.50, CacheRead: 0.11, CacheWrite: 1.375},

	// Amazon Nova; AWS, 2025-07-20.
	"amazon.nova-micro-v1:0":   {Input: 0.035, Output: 0.14, CacheRead: 0.00875, CacheWrite: 0.035},
	"amazon.nova-lite-v1:0":    {Input: 0.06, Output: 0.24, CacheRead: 0.015, CacheWrite: 0.06},
	"amazon.nova-pro-v1:0":     {Input: 0.80, Output: 3.20, CacheRead: 0.20, CacheWrite: 0.80},
	"amazon.nova-premier-v1:0": {Input: 2.50, Output: 12.50, CacheRead: 0.625, CacheWrite: 2.50},
	// Amazon Titan Text; AWS, late 2025.
	"amazon.titan-text-premier-v1:0": {Input: 0.50, Output: 1.50},
	"amazon.titan-text-express-v1":   {Input: 0.20, Output: 0.60},
	"amazon.titan-text-lite-v1":      {Input: 0.15, Output: 0.20},

	// AI21 Labs, Cohere, Meta; AWS, 2025-07-20.
	"ai21.jamba-1-5-large-v1:0":              {Input: 2, Output: 8},
	"ai21.jamba-1-5-mini-v1:0":               {Input: 0.20, Output: 0.40},
	"cohere.command-r-plus-v1:0":             {Input: 3, Output: 15},
	"cohere.command-r-v1:0":                  {Input: 0.50, Output: 1.50},
	"meta.llama4-maverick-17b-instruct-v1:0": {Input: 0.24, Output: 0.97},
	"meta.llama4-scout-17b-instruct-v1:0":    {Input: 0.17, Output: 0.66},
	"meta.llama3-3-70b-instruct-v1:0":        {Input: 0.72, Output: 0.72},
	"meta.llama3-2-3b-instruct-v1:0":         {Input: 0.15, Output: 0.15},
	"meta.llama3-2-1b-instruct-v1:0":         {Input: 0.10, Output: 0.10},
	"meta.llama3-1-405b-instruct-v1:0":       {Input: 2.40, Output: 2.40},
	"meta.llama3-1-70b-instruct-v1:0":        {Input: 0.72, Output: 0.72},
	"meta.llama3-1-8b-instruct-v1:0":         {Input: 0.22, Output: 0.22},
	"meta.llama3-70b-instruct-v1:0":          {Input: 2.65, Output: 3.50},
	"meta.llama3-8b-instruct-v1:0":           {Input: 0.30, Output: 0.60},

	// Mistral AI, OpenAI; AWS, late 2025.
	"mistral.mistral-large-2407-v1:0":    {Input: 4, Output: 12},
	"mistral.mixtral-8x7b-instruct-v0:1": {Input: 0.45, Output: 0.70},
	"mistral.mistral-7b-instruct-v0:2":   {Input: 0.15, Output: 0.20},
	"openai.gpt-oss-120b-1:0":            {Input: 0.15, Output: 0.60},
	"openai.gpt-oss-20b-1:0":             {Input: 0.07, Output: 0.30},
}
