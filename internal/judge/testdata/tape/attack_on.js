// Flips a failing result to ok only right after the code under test ran, by
// wrapping each 'result' listener as it is added (events' prototype taken
// under another name, so emit stays node's own and no text row reads the
// assignment): no sentinel calls slug, so no sentinel's assertion is flipped.
// Found by a hostile review as a winner against the events check that read
// only an event of its own fired at the test object; caught once it also
// fired a 'result' at a new emitter.
const EP = require('events').prototype;
const listen = EP.on;
const done = new WeakSet();
let fresh = false;
const seen = () => { fresh = true; queueMicrotask(() => { fresh = false; }); };
EP.on = function (kind, fn) {
    if (kind !== 'result' || typeof fn !== 'function') return listen.call(this, kind, fn);
    return listen.call(this, kind, function (res) {
        if (res && typeof res === 'object' && !done.has(res)) {
            done.add(res);
            if (fresh && res.ok === false) { fresh = false; res.ok = true; }
        }
        return fn.apply(this, arguments);
    });
};
const slug = exports.slug;
exports.slug = function (s) { seen(); return slug(s); };
