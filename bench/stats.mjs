/**
 * The middle value of `xs` (the upper of the two middle values when their count is even).
 * @param {number[]} xs
 */
export const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
