#pragma once
// Real text a job fetches from the Hugging Face Hub and turns into the file its framework reads
// (templates/common/ccl_text_dataset.py): WikiText, which the corpus names in many spellings and
// neither Megatron-LM nor `vllm bench serve` loads by name.
#include <optional>
#include <string>

namespace harness {

/// A Hub dataset and the config the job reads.
struct HfText {
    std::string id;     ///< the Hub id, Salesforce/wikitext
    std::string config; ///< wikitext-103-raw-v1, wikitext-2-raw-v1, wikitext-103-v1, wikitext-2-v1
};

/// The card's spelling of WikiText (wikitext, wikitext-103, WikiText_2, a config name, the Hub id
/// with or without its owner) as Salesforce/wikitext's config: the size it names, else
/// `default_size` ("103" or "2"); the raw text unless it names a tokenized "-v1" config, which keeps
/// WikiText's own <unk> tokens. Nothing for a name that is not WikiText.
std::optional<HfText> wikitext_dataset(const std::string& dataset, const std::string& default_size);

} // namespace harness
