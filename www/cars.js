// The car-rental demo: two plain HTML forms that are agent tools through their `tool*` attributes
// (SPEC §8). The page handles its forms as any page would; `event.agentInvoked` and
// `event.respondWith` let it answer an agent with data instead of a rendered page.
import init, { ClientTools } from "/pkg/client_tools.js";
import { startConsole } from "./console.js";
import { pageOptions } from "./demo_user.js";

const CARS = [
  { id: "tesla-3", make: "Tesla", model: "Model 3", fuel: "electric", pricePerDay: 89, seats: 5 },
  { id: "renault-zoe", make: "Renault", model: "Zoe", fuel: "electric", pricePerDay: 45, seats: 5 },
  { id: "toyota-yaris", make: "Toyota", model: "Yaris", fuel: "hybrid", pricePerDay: 39, seats: 5 },
  { id: "toyota-rav4", make: "Toyota", model: "RAV4", fuel: "hybrid", pricePerDay: 72, seats: 5 },
  { id: "bmw-320d", make: "BMW", model: "320d", fuel: "diesel", pricePerDay: 79, seats: 5 },
  { id: "audi-a1", make: "Audi", model: "A1", fuel: "petrol", pricePerDay: 55, seats: 4 },
  { id: "renault-clio", make: "Renault", model: "Clio", fuel: "petrol", pricePerDay: 35, seats: 5 },
];

const $ = (selector) => document.querySelector(selector);
const DAY_MS = 24 * 60 * 60 * 1000;

/** The cars a search form asks for, with the price of the whole rental. */
function search(form) {
  const data = new FormData(form);
  const text = (name) => (data.get(name) || "").toString().trim().toLowerCase();
  const number = (name, fallback) => (data.get(name) === "" || data.get(name) === null ? fallback : Number(data.get(name)));
  const days = Math.round((Date.parse(data.get("dropoff")) - Date.parse(data.get("pickup"))) / DAY_MS);
  if (!(days >= 1)) throw new Error("the return date must be at least one day after the pick-up date");
  const [min, max] = [number("minPrice", 0), number("maxPrice", Infinity)];
  const fuel = text("fuel");
  return CARS.filter((car) =>
    (!text("make") || car.make.toLowerCase() === text("make")) &&
    (!text("model") || car.model.toLowerCase().includes(text("model"))) &&
    (fuel === "any" || !fuel || car.fuel === fuel) &&
    car.pricePerDay >= min && car.pricePerDay <= max,
  ).map((car) => ({ ...car, days, total: car.pricePerDay * days }));
}

function showResults(cars) {
  const list = $("#results");
  list.replaceChildren(...cars.map((car) => {
    const item = document.createElement("li");
    item.textContent = `${car.make} ${car.model} · ${car.fuel} · €${car.pricePerDay}/day · €${car.total} for ${car.days} days`;
    return item;
  }));
  if (cars.length === 0) list.append(Object.assign(document.createElement("li"), { className: "muted", textContent: "no car matches" }));
  const choice = $("#reserve select[name=carId]");
  choice.replaceChildren(new Option("Choose a car", ""), ...cars.map((car) => new Option(`${car.make} ${car.model}`, car.id)));
}

$("#search").addEventListener("submit", (event) => {
  event.preventDefault();
  let cars;
  try {
    cars = search(event.target);
  } catch (error) {
    $("#results").replaceChildren(Object.assign(document.createElement("li"), { className: "error", textContent: error.message }));
    // An agent gets the same reason as an error result.
    if (event.agentInvoked) event.respondWith(Promise.reject(error));
    return;
  }
  showResults(cars);
  if (event.agentInvoked) event.respondWith(Promise.resolve({ count: cars.length, cars }));
});

$("#reserve").addEventListener("submit", (event) => {
  event.preventDefault();
  const data = new FormData(event.target);
  const car = CARS.find((c) => c.id === data.get("carId"));
  const text = `Reserved: ${car.make} ${car.model} for ${data.get("name")} (confirmation sent to ${data.get("email")})`;
  $("#reservation").textContent = text;
  if (event.agentInvoked) event.respondWith(Promise.resolve(text));
});

// Search on load, so the reserve form has cars to choose from.
const today = new Date();
$("#search [name=pickup]").value = new Date(today.getTime() + DAY_MS).toISOString().slice(0, 10);
$("#search [name=dropoff]").value = new Date(today.getTime() + 4 * DAY_MS).toISOString().slice(0, 10);
showResults(search($("#search")));

await init();
const tools = new ClientTools(pageOptions(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/ws`));
await startConsole(tools, "search_cars");
