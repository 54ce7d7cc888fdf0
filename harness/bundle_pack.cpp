#include "bundle_pack.hpp"
