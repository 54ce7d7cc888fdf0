#include "plan/plan_steps.hpp"

#include "card/schema.hpp"
#include "util/strings.hpp"

namespace harness {

bool PlanOrigins::in_card(const std::string& card_field) const {
    const YAML::Node node = find_node(m_card.document().root(), card_field);
    return node.IsDefined() && !node.IsNull();
}

std::string PlanOrigins::card_location(const std::string& card_field) const {
    return m_card.document().location(find_node(m_card.document().root(), card_field), card_field);
}

void PlanOrigins::card(const std::string& field, const std::string& card_field) {
    const std::string where = card_location(card_field);
    const Origin::Kind kind = starts_with(where, "--set ")           ? Origin::Kind::set
                              : m_card.document().filled(card_field) ? Origin::Kind::user
                                                                     : Origin::Kind::card;
    m_out[field] = Origin{kind, where, card_field};
}

void PlanOrigins::profile(const std::string& field, const std::string& key) {
    m_out[field] = Origin{Origin::Kind::profile, m_cluster.location(key), key};
}

void PlanOrigins::fallback(const std::string& field, const std::string& rule) {
    m_out[field] = Origin{Origin::Kind::default_rule, "", rule};
}

void PlanOrigins::derived(const std::string& field, const std::string& from, const std::string& where) {
    m_out[field] = Origin{Origin::Kind::derived, where, from};
}

void PlanOrigins::card_or_default(const std::string& field, const std::string& card_field, const std::string& rule) {
    if (in_card(card_field)) {
        card(field, card_field);
    } else {
        fallback(field, rule);
    }
}

void PlanOrigins::card_or_profile(const std::string& field, const std::string& card_field, const std::string& key,
                                  const std::string& rule) {
    if (in_card(card_field)) {
        card(field, card_field);
    } else if (m_cluster.locations.count(key) != 0) {
        profile(field, key);
    } else {
        fallback(field, rule);
    }
}

} // namespace harness
