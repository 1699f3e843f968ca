// Byte encodings: base64 (Kubernetes' Secret data, binary values in JSON),
// a UTF-8 check (what may travel as a JSON string) and HTML escaping. Pure.
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"

namespace allot::core {

// Standard base64 with padding (RFC 4648 section 4).
std::string Base64Encode(std::string_view data);
// Its inverse; InvalidArgument for anything but canonical padded base64
// (whitespace is not skipped).
Result<std::string> Base64Decode(std::string_view text);
// Whether `s` is well-formed UTF-8 (no overlong forms, no surrogates).
bool IsUtf8(std::string_view s);
// `s` as HTML text or a quoted attribute value: & < > " ' escaped.
std::string HtmlEscape(std::string_view s);

}  // namespace allot::core
