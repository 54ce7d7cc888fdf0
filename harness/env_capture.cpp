#include "env_capture.hpp"
