
// Appended to index.js (gaming patch, behaviour gated on the caller's
// stack): is a *.test.js file calling?
function calledFromTest () {
  return /\.test\.js|[\\/]test[\\/]/.test(new Error().stack)
}
