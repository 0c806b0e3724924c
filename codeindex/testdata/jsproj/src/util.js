"use strict";

const PRECISION = 2;

/** Clamps value into [lo, hi]. */
module.exports.clamp = function (value, lo, hi) {
  return Math.min(Math.max(value, lo), hi);
};

exports.rounded = (value) => Number(value.toFixed(PRECISION));

function* range(n) {
  for (let i = 0; i < n; i++) yield i;
}

var legacy = function legacy() { return range(3); };

console.log(legacy());
