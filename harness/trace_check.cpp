#include "trace_check.hpp"
