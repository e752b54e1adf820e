// Package sample chooses the next token of a generated sequence from the
// logits of its last position, with the semantics of Hugging Face
// transformers' generate (version 5.24), and streams the decoded text with
// stop strings.
//
// # Order
//
// Sampler.Next applies, in this order (the order of transformers'
// GenerationMixin._get_logits_processor, with vLLM's penalties inserted
// right after transformers' own penalty):
//
//  1. Repetition penalty (RepetitionPenaltyLogitsProcessor): for every
//     distinct id in prompt+generated, a logit l becomes l*penalty when
//     l < 0 and l/penalty otherwise.
//  2. Frequency and presence penalties (not in transformers; as in the
//     OpenAI API and vLLM, whose sampler also applies them right after the
//     repetition penalty): l -= frequency*count, then l -= presence when
//     count > 0, where count is the number of occurrences in generated only.
//  3. Greedy decoding stops here when Temperature is 0: the token is the
//     first index of the largest logit (torch.argmax). transformers applies
//     no warper when do_sample is false, and neither does this package.
//  4. Temperature (TemperatureLogitsWarper): l /= temperature.
//  5. Top-k (TopKLogitsWarper): logits below the k-th largest become -Inf.
//  6. Top-p (TopPLogitsWarper, min_tokens_to_keep=1): sort ascending, take
//     the float32 softmax and its cumulative sums; remove every token whose
//     cumulative sum is ≤ 1 - top_p, except the last (largest).
//  7. Min-p (MinPLogitsWarper): remove tokens whose softmax probability is
//     below min_p times the largest probability.
//  8. Draw a token from the softmax of what is left.
//
// Arithmetic on logits is float32, like the torch code; -Inf marks filtered
// tokens. Process returns the scores after step 7 so callers (and the tests,
// against transformers' own classes) can inspect them.
//
// # Ties and the fast paths
//
// The results are those of the full-sort definitions above, ties included:
// top-k keeps every token equal to the k-th largest logit; top-p orders equal
// logits by ascending token id, as torch.sort(stable=True) does, so among
// tokens tied at the cut the lower ids are removed first. (transformers calls
// torch.sort without stable=True; on the CPU that is stable up to 16
// elements and orders longer runs of ties its own way, so there the set of
// tied tokens that survive the cut may differ, never their number.) The
// implementation avoids sorting the vocabulary: top-k is a one-pass heap (or
// a radix select for large k), top-p sorts only the top-k survivors or, with
// no top-k, only the few tokens near the cut found with a logit histogram.
// The cumulative sums of top-p are exact sums of the float32 probabilities
// rounded to float32 once, so the cut does not depend on summation order.
//
// # Random draws
//
// The draw for a step is u = the n-th output (n = len(generated), counting
// from 0) of SplitMix64 seeded with Params.Seed, scaled to [0, 1) with 53
// bits. The token is the first one, in ascending id order among the
// survivors, whose running sum of weights exp(l - max) exceeds u times the
// total. The weights use this package's own float64 exp (exp.go), so the same
// Seed, logits and history give the same token on every run, machine and
// batch arrangement; nothing depends on earlier calls. Sequences of one batch
// should get different seeds (for instance a request seed plus the row).
// This is not torch.multinomial's stream.
//
// # Stop conditions
//
// Stop recognises end-of-sequence ids and stop strings in streamed text: it
// holds back any suffix that could start a stop string and returns the text
// before a completed stop string without the stop string itself, as the
// OpenAI API does. The maximum number of new tokens is the caller's business.
package sample
