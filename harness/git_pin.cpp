#include "git_pin.hpp"
