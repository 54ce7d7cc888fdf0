#pragma once
namespace harness {
inline constexpr const char* k_version = "0.1.0";
} // namespace harness
