#include "bundle_verify.hpp"
