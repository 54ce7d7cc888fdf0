#include "reproduce.hpp"
