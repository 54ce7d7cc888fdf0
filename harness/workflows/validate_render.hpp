#pragma once
// `validate --strict` as a promise: a card that passes it renders. plan/validate checks the card
// and its plan; this renders it too, in memory, and reports what render would refuse (a framework
// without templates for the target, a template that cannot be filled) as an error of the card.
#include "plan/validate.hpp"

namespace harness {

/// validate_file, and with options.strict a render in memory when the plan has no error.
ValidationResult validate_and_render(const fs::path& file, const ValidateOptions& options);

} // namespace harness
