#include "secret_scrub.hpp"
